package nemesis

import "fmt"

// The blackhole family: data stops, connections stay open (toxiproxy's
// timeout toxic with timeout 0), which is what a partition looks like to a
// TCP client: no RST, no FIN, just silence until its own timeout fires. When
// the fault heals, toxiproxy closes the affected connections and clients
// reconnect.
func init() {
	Register("blackhole", "drop all data on the targeted links, keeping the connections open", newBlackhole(""), linkTargets.with("stream"))
	Register("partition", "cut the targeted hosts from the targeted nodes (direction: both, to-server or from-server)", newBlackhole("partition"), linkTargets.with("direction"))
	Register("lost-reply", "deliver commands on the targeted links but drop the replies: the client times out while the command took effect", newBlackhole("downstream"), linkTargets)
}

func newBlackhole(variant string) Factory {
	return func(s Spec) (Fault, error) {
		streams := s.streams()
		switch variant {
		case "downstream":
			// The command reaches Redis and runs; its reply is lost: the
			// ambiguous outcome the checker must treat as unknown.
			streams = []string{"downstream"}
		case "partition":
			switch s.Direction {
			case "", "both":
				streams = []string{"upstream", "downstream"}
			case "to-server":
				streams = []string{"upstream"}
			case "from-server":
				streams = []string{"downstream"}
			default:
				return nil, &FieldError{"direction", fmt.Sprintf("%q: want both, to-server or from-server", s.Direction)}
			}
			if len(s.Hosts)+len(s.Clients) == 0 && len(s.Nodes) == 0 && s.Pick == "" {
				return nil, fmt.Errorf("partition: needs hosts, clients, nodes or pick")
			}
		}
		return &toxicFault{spec: s, streams: streams, toxic: func() Toxic {
			return Toxic{Type: "timeout", Attributes: map[string]any{"timeout": 0}}
		}}, nil
	}
}

package nemesis

import "fmt"

// The blackhole family: data stops, connections stay open (toxiproxy's
// timeout toxic with timeout 0), which is what a partition looks like to a
// TCP client: no RST, no FIN, just silence until its own timeout fires. When
// the fault heals, toxiproxy closes the affected connections and clients
// reconnect.
func init() {
	Register("blackhole", "drop all data on the targeted links, keeping the connections open", linkTargets,
		func(s Spec, p *BlackholeParams) (Fault, error) { return blackhole(s, streams(p.Stream)), nil })
	Register("partition", "cut the targeted hosts from the targeted nodes (direction: both, to-server or from-server)", linkTargets,
		func(s Spec, p *PartitionParams) (Fault, error) {
			if len(s.Hosts)+len(s.Clients) == 0 && len(s.Nodes) == 0 && s.Pick == "" {
				return nil, fmt.Errorf("partition: needs hosts, clients, nodes or pick")
			}
			return blackhole(s, p.streams()), nil
		})
	// The command reaches Redis and runs; its reply is lost: the ambiguous
	// outcome the checker must treat as unknown.
	Register("lost-reply", "deliver commands on the targeted links but drop the replies: the client times out while the command took effect", linkTargets,
		func(s Spec, _ *NoParams) (Fault, error) { return blackhole(s, []string{"downstream"}), nil })
}

// BlackholeParams are blackhole's parameters.
type BlackholeParams struct {
	// Stream is upstream, downstream or both (the default).
	Stream string `yaml:"stream"`
}

// Validate checks the stream.
func (p *BlackholeParams) Validate() error { return checkStream(p.Stream) }

// PartitionParams are partition's parameters.
type PartitionParams struct {
	// Direction is both (the default), to-server or from-server.
	Direction string `yaml:"direction"`
}

// Validate checks the direction.
func (p *PartitionParams) Validate() error {
	switch p.Direction {
	case "", "both", "to-server", "from-server":
		return nil
	}
	return &FieldError{"direction", fmt.Sprintf("%q: want both, to-server or from-server", p.Direction)}
}

// streams is the toxiproxy streams the direction cuts.
func (p *PartitionParams) streams() []string {
	switch p.Direction {
	case "to-server":
		return []string{"upstream"}
	case "from-server":
		return []string{"downstream"}
	}
	return []string{"upstream", "downstream"}
}

func blackhole(s Spec, streams []string) Fault {
	return &toxicFault{spec: s, streams: streams, toxic: func() Toxic {
		return Toxic{Type: "timeout", Attributes: map[string]any{"timeout": 0}}
	}}
}

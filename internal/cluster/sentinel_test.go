package cluster

import (
	"strings"
	"testing"
	"time"
)

// TestSentinelConf: a Sentinel given its id and its peers starts knowing
// them (myid, one known-sentinel line per master and peer), as its own
// sentinel.conf says after it met them; without them the file has neither.
func TestSentinelConf(t *testing.T) {
	p := &Process{Node: Node{Name: "s1", Addr: "127.0.0.1:7001"}, Port: 7001, Dir: "/tmp/x"}
	id, peer := NewSentinelID(), NewSentinelID()
	if len(id) != 40 || id == peer {
		t.Fatalf("ids %q and %q: want two distinct 40-digit ids", id, peer)
	}
	base := SentinelOptions{Masters: []Node{{Name: "n1", Addr: "127.0.0.1:6001"}, {Name: "n2", Addr: "127.0.0.1:6002"}},
		Quorum: 2, DownAfter: 500 * time.Millisecond}
	for _, tc := range []struct {
		name      string
		opts      func(o SentinelOptions) SentinelOptions
		want, not []string
	}{
		{"alone", func(o SentinelOptions) SentinelOptions { return o },
			[]string{"sentinel monitor n1 127.0.0.1 6001 2", "sentinel down-after-milliseconds n2 500"},
			[]string{"myid", "known-sentinel"}},
		{"with peers", func(o SentinelOptions) SentinelOptions {
			o.ID, o.Peers = id, []Peer{{Addr: "127.0.0.1:7002", ID: peer}}
			return o
		}, []string{"sentinel myid " + id, "sentinel known-sentinel n1 127.0.0.1 7002 " + peer,
			"sentinel known-sentinel n2 127.0.0.1 7002 " + peer}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conf := sentinelConf(p, tc.opts(base))
			lines := strings.Split(conf, "\n")
			has := func(l string) bool {
				for _, x := range lines {
					if x == l {
						return true
					}
				}
				return false
			}
			for _, l := range tc.want {
				if !has(l) {
					t.Errorf("missing %q in:\n%s", l, conf)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(conf, s) {
					t.Errorf("unexpected %q in:\n%s", s, conf)
				}
			}
		})
	}
}

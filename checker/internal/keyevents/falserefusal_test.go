package keyevents

import "testing"

// TestFalseRefusals: a refusal is false only when, on every node with a
// stream, the key stood as the caller's (its token's set, read, received
// before the invoke), nothing took it away in the window, and a sync sent
// after the refusal closes it. Times in ms; the refusal is c1's release of
// k0 with token t1 from 100 to 110.
func TestFalseRefusals(t *testing.T) {
	set := func(at int64, owner string) *Event { return &Event{Time: at, Key: "k0", Value: "set", Owner: owner} }
	ev := func(at int64, value string) *Event { return &Event{Time: at, Key: "k0", Value: value} }
	sync := func(at, sent int64) *Event { return &Event{Time: at, Sync: true, N: sent} }
	for _, tc := range []struct {
		name  string
		n1    []*Event
		n2    []*Event // a second node's stream, when there is one
		owner int      // t1's owner (AmbiguousOwner: granted to two)
		found bool
	}{
		{"held throughout, a sync after", []*Event{set(10, "t1"), sync(120, 115)}, nil, 1, true},
		{"a TTL change in the window keeps it", []*Event{set(10, "t1"), ev(105, "pexpire"), sync(120, 115)}, nil, 1, true},
		{"deleted in the window", []*Event{set(10, "t1"), ev(105, "del"), sync(120, 115)}, nil, 1, false},
		{"expired in the window", []*Event{set(10, "t1"), ev(105, "expired"), sync(120, 115)}, nil, 1, false},
		{"set to another value in the window", []*Event{set(10, "t1"), set(105, "t2"), sync(120, 115)}, nil, 1, false},
		{"an unread set in the window", []*Event{set(10, "t1"), set(105, ""), sync(120, 115)}, nil, 1, false},
		// An observer's gap (its node restarted, empty, without an event):
		// whatever the key held after it, nobody read.
		{"an observer's gap in the window", []*Event{set(10, "t1"), ev(105, "gap"), sync(120, 115)}, nil, 1, false},
		{"an observer's gap before the invoke", []*Event{set(10, "t1"), ev(50, "gap"), sync(120, 115)}, nil, 1, false},
		{"gone before the invoke", []*Event{set(10, "t1"), ev(50, "expired"), sync(120, 115)}, nil, 1, false},
		{"another's before the invoke", []*Event{set(10, "t2"), sync(120, 115)}, nil, 1, false},
		{"an unread set before the invoke", []*Event{set(10, ""), sync(120, 115)}, nil, 1, false},
		{"no sync sent after the refusal", []*Event{set(10, "t1"), sync(120, 105)}, nil, 1, false},
		{"a token granted to two", []*Event{set(10, "t1"), sync(120, 115)}, nil, AmbiguousOwner, false},
		{"held on both nodes", []*Event{set(10, "t1"), sync(120, 115)}, []*Event{set(11, "t1"), sync(121, 116)}, 1, true},
		{"not on the second node", []*Event{set(10, "t1"), sync(120, 115)}, []*Event{sync(121, 116)}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &Input{Nodes: []string{"n1"}, Streams: map[string][]*Event{"n1": tc.n1}, Owners: map[string]int{"t1": tc.owner, "t2": 2}}
			if tc.n2 != nil {
				in.Nodes = append(in.Nodes, "n2")
				in.Streams["n2"] = tc.n2
			}
			in.Refusals = []Release{{F: "release", Client: 1, Key: "k0", Token: "t1", Invoke: 100, Done: 110}}
			got := FalseRefusals(in)
			if (len(got) > 0) != tc.found {
				t.Errorf("found %v, want %v", got, tc.found)
			}
		})
	}
}

package client

import (
	"slices"
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// TestTries: a call's tries are the sends of the command it opened with,
// on the same node; the rest of a try, another call's commands and a
// watchdog's (no call) are not.
func TestTries(t *testing.T) {
	const (
		set     = "cmd/n1/SET/before"
		set2    = "cmd/n2/SET/before"
		evalsha = "cmd/n1/EVALSHA:1a2b3c4d/before"
		eval    = "cmd/n1/EVAL:1a2b3c4d/before"
	)
	type send struct {
		call, point string
		at          int64
	}
	for _, tc := range []struct {
		name  string
		sends []send
		want  []int64
	}{
		{"a waiter's SETs", []send{{lockimpl.CallAcquire, set, 1}, {lockimpl.CallAcquire, set, 17}, {lockimpl.CallAcquire, set, 33}}, []int64{1, 17, 33}},
		{"a quorum's other nodes are the same try", []send{{lockimpl.CallAcquire, set, 1}, {lockimpl.CallAcquire, set2, 2}, {lockimpl.CallAcquire, set, 20}, {lockimpl.CallAcquire, set2, 21}}, []int64{1, 20}},
		{"a NOSCRIPT's EVAL is the same try", []send{{lockimpl.CallAcquire, evalsha, 1}, {lockimpl.CallAcquire, eval, 2}, {lockimpl.CallAcquire, evalsha, 9}}, []int64{1, 9}},
		{"a watchdog's commands are no try", []send{{"", evalsha, 1}, {lockimpl.CallAcquire, set, 2}, {"", evalsha, 3}, {lockimpl.CallAcquire, set, 4}}, []int64{2, 4}},
		{"another call's commands are no try", []send{{lockimpl.CallRelease, evalsha, 1}, {lockimpl.CallAcquire, set, 2}}, []int64{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tr Tries
			tr.Begin(lockimpl.CallAcquire)
			for _, s := range tc.sends {
				tr.Sent(s.call, s.point, s.at)
			}
			if got := tr.Take(); !slices.Equal(got, tc.want) {
				t.Errorf("tries %v, want %v", got, tc.want)
			}
			if tr.Sent(lockimpl.CallAcquire, set, 99); tr.Take() != nil {
				t.Error("a send after Take was collected")
			}
		})
	}
}

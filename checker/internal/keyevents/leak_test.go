package keyevents

import (
	"maps"
	"testing"
	"time"
)

// TestLeaksReadsOnly: a token no acquire was granted, set while a failed
// acquire was under way and still standing two seconds later, is a lost
// acquire and, past the one-second bound from that acquire's end, an
// orphan; Leaks finds both without writing into its input's BeliefEnd.
func TestLeaksReadsOnly(t *testing.T) {
	const ms = int64(time.Millisecond)
	in := &Input{
		Nodes: []string{"n1"},
		Streams: map[string][]*Event{"n1": {
			{Key: "k0", Time: 5 * ms, Value: "set", Owner: "tx"},
			{Sync: true, Time: 20 * ms, N: 19 * ms},
			{Sync: true, Time: 2000 * ms, N: 1999 * ms},
		}},
		Owners:      map[string]int{},
		OrphanBound: time.Second,
		Failed:      map[string][]FailedAcquire{"k0": {{Key: "k0", Client: 1, Invoke: 1 * ms, Done: 10 * ms, Definite: true}}},
		BeliefEnd:   map[[2]string]int64{{"k1", "ty"}: 3 * ms},
	}
	before := maps.Clone(in.BeliefEnd)
	res := Leaks(in)
	if len(res.LostAcquires) != 1 || res.LostAcquires[0].At != 10*ms {
		t.Errorf("lost acquires %+v, want one at 10 ms", res.LostAcquires)
	}
	if len(res.Orphans) != 1 || res.Orphans[0].At != 10*ms {
		t.Errorf("orphans %+v, want one from 10 ms", res.Orphans)
	}
	if len(res.NotFreed)+len(res.LostUnknown) != 0 {
		t.Errorf("not freed %+v, lost unknown %+v: want none", res.NotFreed, res.LostUnknown)
	}
	if !maps.Equal(in.BeliefEnd, before) {
		t.Errorf("Leaks wrote into its input's BeliefEnd: %v, was %v", in.BeliefEnd, before)
	}
}

package keyevents

import (
	"math/rand/v2"
	"testing"
)

// TestJudgeNodeFast: the walk from a release's invoke (judgeNodeFast)
// gives the whole walk's answer (judgeNode) on random streams of sets
// (the releaser's token, other granted tokens, an ambiguous one, an
// ungranted value, unread), ends, TTL changes and syncs on two keys, for
// releases anywhere in them, with and without stamp tokens. The entry
// that ended the releaser's state is compared where the check reads it
// (a verdict other than mine or unread at the start).
func TestJudgeNodeFast(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 9))
	owners := []string{"t1", "t2", "t3", "amb", "ungranted", ""}
	events := []string{"set", "set", "set", "del", "expired", "pexpire", "hset"}
	for trial := range 400 {
		in := &Input{Owners: map[string]int{"t1": 1, "t2": 2, "t3": 3, "amb": AmbiguousOwner}, StampTokens: trial%4 == 3}
		var evs []*Event
		t0 := int64(0)
		for range 5 + rng.IntN(60) {
			t0 += int64(rng.IntN(3)) // equal times too
			if rng.IntN(6) == 0 {
				evs = append(evs, &Event{Sync: true, Time: t0, N: t0 - int64(rng.IntN(4))})
				continue
			}
			evs = append(evs, &Event{Key: []string{"k0", "k1"}[rng.IntN(2)], Time: t0,
				Value: events[rng.IntN(len(events))], Owner: owners[rng.IntN(len(owners))]})
		}
		ix := in.indexStream(evs)
		for range 20 {
			inv := int64(rng.IntN(int(t0) + 3))
			r := Release{F: "release", Key: []string{"k0", "k1", "k2"}[rng.IntN(3)], Token: owners[rng.IntN(3)],
				Invoke: inv, Done: inv + int64(rng.IntN(6))}
			wv, we, wf := in.judgeNode(evs, r)
			gv, ge, gf := in.judgeNodeFast(ix, r)
			if gv != wv || gf != wf || wv > unreadAtStart && ge != we {
				t.Fatalf("trial %d, release %+v: fast %v %+v %v, whole walk %v %+v %v", trial, r, gv, ge, gf, wv, we, wf)
			}
		}
	}
}

package keyevents

import (
	"fmt"
	"sort"
)

// False refusals, the mirror image of false successes. A release or an
// extend answered with a definite "not held" says "the key is not mine".
// The servers' key events can prove it was: on every node with a stream,
// the state the operation met at its invoke was the caller's (its own
// token's set, read exactly, received before the invoke: it happened
// before), nothing received after the invoke up to a sync sent after the
// operation completed took it away (no end, no set to another value), and
// that sync closes the window. Every state the operation may have met was
// then the caller's, whatever the order of the entries received in the
// window: the refusal is false, and the key the caller now believes gone
// stands until its TTL. A node whose stream lacks the closing sync, or
// whose state at the invoke was unread or not the caller's, leaves the
// refusal unjudged or cleared: only certain orderings conclude.

// FalseRefusal is one refusal the key events prove false.
type FalseRefusal struct {
	At   int64 // the operation's invoke
	Text string
}

// FalseRefusals judges in.Refusals by the streams.
func FalseRefusals(in *Input) []FalseRefusal {
	var out []FalseRefusal
	if len(in.Nodes) == 0 {
		return nil
	}
	indexes := map[string]*streamIndex{}
	for _, n := range in.Nodes {
		indexes[n] = in.indexStream(in.Streams[n])
	}
	for _, r := range in.Refusals {
		if r.Token == "" || in.Owners[r.Token] == AmbiguousOwner {
			continue
		}
		held, since := true, int64(-1)
		for _, n := range in.Nodes {
			at, ok := in.heldThroughout(indexes[n], r)
			if !ok {
				held = false
				break
			}
			since = max(since, at)
		}
		if held {
			out = append(out, FalseRefusal{At: r.Invoke, Text: fmt.Sprintf(
				"false refusal: c%d's %s of %s at %s answered \"not held\", but %s stood as c%d's on every node from %s to past the %s's end",
				r.Client, r.F, r.Key, ms(r.Invoke), r.Key, r.Client, ms(since), r.F)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// heldThroughout says the key stood as r's caller's on one node for the
// whole of r (see the file's comment), and when the set that made it so
// was received. Stricter than a false success's states: any set to another
// value (granted or not) or an unread one, and any end, breaks it; a TTL
// change does not.
func (in *Input) heldThroughout(ix *streamIndex, r Release) (since int64, ok bool) {
	evs := ix.evs
	pos := sort.Search(len(evs), func(i int) bool { return evs[i].Time >= r.Invoke })
	ks := ix.keys[r.Key]
	if ks == nil {
		return 0, false
	}
	last := -1
	for i := lastBefore(ks.all, pos); i >= 0 && last < 0; i = lastBefore(ks.all, i) {
		if e := evs[i]; isEndEvent(e.Value) || isSetEvent(e.Value) {
			last = i
		}
	}
	if last < 0 || !in.stillMine(evs[last], r.Token) {
		return 0, false
	}
	for _, e := range evs[pos:] {
		switch {
		case e.Sync && e.N > r.Done:
			return evs[last].Time, true
		case e.Sync || e.Key != r.Key:
		case isEndEvent(e.Value) || isSetEvent(e.Value) && !in.stillMine(e, r.Token):
			return 0, false
		}
	}
	return 0, false // no sync closes the window: not judged
}

// stillMine says e, a set, left the key to token, read exactly.
func (in *Input) stillMine(e *Event, token string) bool {
	return isSetEvent(e.Value) && e.Owner == token
}

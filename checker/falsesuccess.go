package checker

import "fmt"

// False successes. A release acknowledged ok says "the lock was mine and is
// now free". The servers' own key events (FServer entries, recorded by an
// observer outside the proxies) can prove it was not: the set that made the
// key the releaser's (its Owner is the release's token) was followed by the
// key's end (del, expired, evicted) or by a set to another owner, and the
// harness had received that before the release was even invoked. Received
// before means happened before (events reach the harness after the server
// executes them), so the conclusion never rests on the observer's delay.
// A set counts only when its value is a token some acquire was granted
// with (see takenBy);
// a set whose owner the observer could not read exactly is never used.
// With several nodes (Redlock) the release is false only if the key had
// stopped being the releaser's on every node where it had been.
//
// Extends are not recorded as operations, so only releases are checked.

// ambiguousOwner marks a token granted to more than one client.
const ambiguousOwner = -1

// falseSuccess is one release acknowledged ok on a key that, by the
// servers, was no longer the releaser's.
type falseSuccess struct {
	at   int64 // the release's invoke
	text string
}

func checkFalseSuccesses(a *analysis) []falseSuccess {
	if len(a.server) == 0 || len(a.releases) == 0 {
		return nil
	}
	type nodeKey struct{ node, key string }
	streams := map[nodeKey][]*Op{}
	for _, op := range a.server {
		nk := nodeKey{op.Node, op.Key}
		streams[nk] = append(streams[nk], op)
	}
	nodes := map[string][]string{} // key → nodes with events on it
	for nk := range streams {
		nodes[nk.key] = append(nodes[nk.key], nk.node)
	}
	var out []falseSuccess
	for _, r := range a.releases {
		if r.token == "" || a.owners[r.token] == ambiguousOwner {
			continue
		}
		mine, ended := 0, 0
		var end, next *Op
		for _, node := range nodes[r.key] {
			evs := streams[nodeKey{node, r.key}]
			set := -1 // the last set to the releaser's token received before the invoke
			for i, e := range evs {
				if e.Time >= r.invoke {
					break
				}
				// A set received before the acquire was invoked is an
				// earlier holder's, even when it wrote the same value.
				if e.Owner == r.token && isSetEvent(e.Value) && e.Time >= r.acqInvoke {
					set = i
				}
			}
			if set < 0 {
				continue
			}
			mine++
			for i := set + 1; i < len(evs) && evs[i].Time < r.invoke; i++ {
				e := evs[i]
				if isEndEvent(e.Value) || a.takenBy(e, r.token) {
					ended++
					if end == nil || e.Time < end.Time {
						end, next = e, nil
						for _, f := range evs[i:] {
							if f.Time < r.done && a.takenBy(f, r.token) {
								next = f
								break
							}
						}
					}
					break
				}
			}
		}
		if mine == 0 || ended < mine {
			continue
		}
		// A lock granted on several nodes (Redlock) had its value set on a
		// majority of them. When the observer saw it on fewer (its reply to
		// a set was ambiguous, or the event had not arrived), the view is
		// incomplete: the nodes it did see may be a failed try's, which the
		// library released itself before winning elsewhere with the same
		// value. No conclusion then.
		if n := len(nodes[r.key]); n > 1 && mine < n/2+1 {
			continue
		}
		text := fmt.Sprintf("false success: c%d's release of %s at %s reported ok, but %s had ", r.client, r.key, ms(r.invoke), r.key)
		switch {
		case isEndEvent(end.Value):
			text += fmt.Sprintf("%s at %s (%s)", pastTense(end.Value), ms(end.Time), end.Node)
		default:
			text += fmt.Sprintf("been set by %s at %s (%s)", a.ownerName(end.Owner), ms(end.Time), end.Node)
		}
		if next != nil && next != end {
			text += fmt.Sprintf(" and been set by %s at %s", a.ownerName(next.Owner), ms(next.Time))
		}
		out = append(out, falseSuccess{at: r.invoke, text: text})
	}
	return out
}

// takenBy says e set the key to another holder's token: one that an
// acquire was granted with. A set to a value nobody was granted (getset's
// loser overwriting the stamp with GETSET before it finds it lost) changes
// the value but takes the lock from no one: the algorithm's own ownership
// is not the value, so such a set is not counted against the holder.
func (a *analysis) takenBy(e *Op, token string) bool {
	if !isSetEvent(e.Value) || e.Owner == "" || e.Owner == token {
		return false
	}
	c, held := a.owners[e.Owner]
	return held && c != ambiguousOwner
}

func (a *analysis) ownerName(token string) string {
	if c, ok := a.owners[token]; ok && c != ambiguousOwner {
		return fmt.Sprintf("c%d", c)
	}
	return fmt.Sprintf("another owner (%q)", token)
}

func isSetEvent(ev string) bool {
	switch ev {
	case "set", "hset", "hincrby", "hincrbyfloat":
		return true
	}
	return false
}

func isEndEvent(ev string) bool {
	switch ev {
	case "del", "expired", "evicted", "rename_from", "unlink":
		return true
	}
	return false
}

func pastTense(ev string) string {
	switch ev {
	case "del", "unlink":
		return "been deleted"
	case "expired":
		return "expired"
	case "evicted":
		return "been evicted"
	case "rename_from":
		return "been renamed away"
	}
	return ev
}

package keyevents

import (
	"fmt"
	"sort"
)

// False successes. A release acknowledged ok says "the lock was mine and I
// freed it". The servers' own key events (FServer entries, recorded by an
// observer per node outside the proxies) can prove it was not: at every
// moment the release could have acted, on every node, the key was not the
// releaser's.
//
// What is certain, and all the argument uses:
//   - Each node's entries are in that node's own order (one subscription
//     connection; Redis writes a connection's output in the order it
//     generates it). A node's stream is a sequence of states of the key.
//   - An entry received before the release was invoked happened before it
//     (events reach the harness after the server executed them). So the
//     key's state when the release began is the state after that prefix of
//     the stream or after some later entry, never an earlier one.
//   - A sync entry (FSync) whose PING was sent after the release completed
//     marks the end: every entry after it happened after the release, and
//     every entry the node executed before the release is before it.
//
// An entry received after the invoke proves nothing about order, so every
// state between the two bounds is one the release may have met. The
// release is false only if none of them was the releaser's, on every node
// with a stream. That correlates the release with its own effect without
// naming it: had the release deleted its own key, the set of its token
// and its DEL would lie between the bounds (or the set before them, still
// standing), and one state would be the releaser's.
//
// A state is the releaser's after a set of its token, not the releaser's
// after the key's end (del, expired, evicted) or a set to another holder's
// token (see takenBy), and unread after a set whose owner the observer
// could not read exactly (the value changed before its read): maybe the
// releaser's. A set to a value nobody was granted (getset's loser writing
// its stamp) changes no one's ownership. Tokens granted to several clients
// (timestamp locks stamping the same millisecond) say nothing about whose
// the key is: such releases are not checked.
//
// The release is cleared when the state some stream shows at the invoke
// was the releaser's. It is not judged (neither flagged nor cleared, and
// counted as such, "observer behind") when that state was unread, when a
// node's stream has no sync after the release (the observer lagged, or
// stopped with its node), or when the only states that may have been the
// releaser's were received after the release began: the observer's view
// was behind at the moment that matters (a slow observer; a quorum lock
// whose winning sets arrive late).
//
// An extend or a watchdog's renewal acknowledged ok (FExtend) says the
// same thing as a release, "the lock was mine when I acted", and is judged
// by exactly the same window: an extend that reported ok while on every
// node the key was certainly not the extender's is a false success on
// extend. One more finding belongs to extends alone: a foreign renewal,
// an extend acknowledged ok whose key, on every node with a stream, was
// throughout its window another holder's (set to a token an acquire was
// granted with, and not ended since): whatever the extend wrote, it wrote
// it on someone else's lock, which then outlives its own TTL.

// FalseSuccess is one release acknowledged ok on a key that, by the
// servers, was no longer the releaser's.
type FalseSuccess struct {
	At   int64 // the release's invoke
	Text string
	F    string // the release's F
	// Extend: an extend or renewal, not a release.
	Extend bool
	// Foreign: an extend whose key was another holder's throughout its
	// window on every node.
	Foreign bool
	// ThroughStalls: the release is not false once it is moved earlier by
	// the harness's own stalls in its hold (falseThroughStalls).
	ThroughStalls bool
}

// FalseSuccessResult is what the check found, in order of time, and what
// it could not judge (how many, and why the first).
type FalseSuccessResult struct {
	Found       []FalseSuccess
	Unjudged    int
	UnjudgedWhy string
}

// keyState is the key on one node as a release may have met it.
type keyState int

const (
	keyNotMine keyState = iota
	keyMine             // set to the releaser's token
	keyUnread           // set by someone the observer could not read
	// keyForeign is not the releaser's either: another holder's token.
	keyForeign
)

// FalseSuccesses judges in.Releases by the streams (see the package
// comment).
func FalseSuccesses(in *Input) FalseSuccessResult {
	var res FalseSuccessResult
	streams, nodes := in.Streams, in.Nodes // node → its key events and syncs, in its order
	indexes := map[string]*streamIndex{}
	for _, n := range nodes {
		indexes[n] = in.indexStream(streams[n])
	}
	for _, r := range in.Releases {
		if r.Token == "" || in.Owners[r.Token] == AmbiguousOwner {
			continue
		}
		worst, at, end, foreign := in.judgeRelease(nodes, indexes, r)
		switch {
		case worst == mineAtStart:
			continue
		case worst < notMine:
			res.Unjudged++
			if res.UnjudgedWhy == "" {
				why := "no sync from " + at + " after the " + r.F
				switch worst {
				case unreadAtStart:
					why = "who set it last on " + at + " before the " + r.F + " was not read"
				case mineLater:
					why = at + "'s events that may have made it the " + r.F + "er's arrived after the " + r.F + " began"
				}
				res.UnjudgedWhy = fmt.Sprintf("c%d's %s of %s at %s: observer behind (%s)", r.Client, r.F, r.Key, ms(r.Invoke), why)
			}
			continue
		case end == nil:
			// No stream ever showed the key as possibly the releaser's,
			// not even its own acquire's set: the observers saw nothing of
			// this lock (its key holds something other than its token).
			continue
		}
		fs := FalseSuccess{At: r.Invoke, Text: in.falseSuccessText(r, end, streams), F: r.F, Extend: r.Extend, Foreign: r.Extend && foreign}
		if fs.Foreign {
			fs.Text = in.foreignText(r, end, streams)
		}
		fs.ThroughStalls = in.falseThroughStalls(nodes, indexes, r)
		res.Found = append(res.Found, fs)
	}
	sort.SliceStable(res.Found, func(i, j int) bool { return res.Found[i].At < res.Found[j].At })
	return res
}

// judgeRelease is every node's answer for release r: the least conclusive
// (and on which node), the entry that last ended a state that may have been
// the releaser's, and whether every node's states were another holder's.
func (in *Input) judgeRelease(nodes []string, indexes map[string]*streamIndex, r Release) (worst nodeVerdict, at string, end *Event, foreign bool) {
	worst, foreign = notMine, true
	for _, n := range nodes {
		v, e, f := in.judgeNodeFast(indexes[n], r)
		foreign = foreign && f
		if v < worst {
			worst, at = v, n
		}
		if v == mineAtStart {
			break
		}
		if e != nil && (end == nil || e.Time < end.Time) {
			end = e
		}
	}
	return worst, at, end, foreign
}

// falseThroughStalls says whether release r, found false, would not be once
// moved earlier by the harness's own stalls from the invoke of the acquire
// that granted its hold to its completion. The clients are the harness's
// goroutines: while it was not scheduled they could not release, so a
// release that met someone else's key only because the harness stalled in
// the hold, or between a check and a DEL, proves nothing about the lock
// (the rule the checker applies to overlapping holds). The releaser's own
// lag counts as the stalls do; another client's does not (Input.LateIn).
func (in *Input) falseThroughStalls(nodes []string, indexes map[string]*streamIndex, r Release) bool {
	if !in.AnyStall {
		return false
	}
	from := r.Invoke
	if in.HoldStart != nil {
		from = in.HoldStart(r.Key, r.Client, r.Invoke)
	}
	s := in.LateIn(r.Client, from, r.Done)
	if s == 0 {
		return false
	}
	early := r
	early.Invoke, early.Done = r.Invoke-s, r.Done-s
	worst, _, end, _ := in.judgeRelease(nodes, indexes, early)
	return worst != notMine || end == nil
}

// nodeVerdict is one node's answer for one release.
type nodeVerdict int

const (
	// mineAtStart: the state the stream shows when the release began was
	// the releaser's. The release is not false.
	mineAtStart nodeVerdict = iota
	// unreadAtStart: that state was set by someone the observer could not
	// read (the value changed before its read): maybe the releaser. Not
	// judged.
	unreadAtStart
	// mineLater: not at the start, but an entry received after the invoke
	// may have made it the releaser's: the observer's view was behind when
	// the release began, and entries received after it cannot be ordered
	// against it. Not judged.
	mineLater
	// notMineOpen: never the releaser's in the stream, but no sync closes
	// the window: the stream may lack what the node did before the release
	// ended. Not judged.
	notMineOpen
	// notMine: never the releaser's between the bounds, and a sync closes
	// the window.
	notMine
)

// judgeNode walks one node's stream for release r: the states up to the
// last entry received before the invoke fold into the state the release
// may first have met; every later state up to the first sync sent after
// the release completed is one it may have met too. end is the entry that
// last ended a state that may have been the releaser's. foreign says every
// state the release may have met on this node was another holder's.
func (in *Input) judgeNode(evs []*Event, r Release) (v nodeVerdict, end *Event, foreign bool) {
	return in.judgeFrom(evs, r, 0, keyNotMine, nil, false)
}

// judgeFrom is judgeNode's walk from evs[start], with the key's state st
// and the entry end that last ended a state that may have been the
// releaser's, as they were after evs[:start]; lapse says end ended a state
// that was certainly the releaser's (its own token's set, read).
//
// An extend whose key was certainly its own and then certainly ended
// before it began (lapsed) claims a lease that had lapsed: a state of its
// token after that can only be a set by the extend itself (RedLock.net's
// extend re-creates a missing key, catalogue 25; redsync's SetNXOnExtend),
// which re-takes the lock, it does not keep it. Such an extend is judged as
// if those states were not its own.
func (in *Input) judgeFrom(evs []*Event, r Release, start int, st keyState, end *Event, lapse bool) (v nodeVerdict, _ *Event, foreign bool) {
	started := false // the walk is past the entries received before the invoke
	lapsed := false  // an extend whose lease lapsed before it began
	for _, e := range evs[start:] {
		if !started && e.Time >= r.Invoke {
			started = true
			switch st {
			case keyMine:
				return mineAtStart, end, false
			case keyUnread:
				return unreadAtStart, end, false
			}
			foreign = st == keyForeign
			lapsed = r.Extend && lapse && end != nil
		}
		if e.Sync {
			if e.N > r.Done {
				if !started { // nothing received in the window: the state at the invoke is the only one
					foreign = st == keyForeign
				}
				return notMine, end, foreign
			}
			continue
		}
		if e.Key != r.Key {
			continue
		}
		next := in.transition(st, e, r.Token)
		mine := func(k keyState) bool { return k == keyMine || k == keyUnread }
		if !started {
			lapse = st == keyMine && !mine(next) || lapse && !mine(next)
		}
		if !mine(next) && mine(st) && !lapsed {
			end = e
		}
		st = next
		if started {
			foreign = foreign && st == keyForeign
		}
		if started && mine(st) && !lapsed {
			return mineLater, end, false
		}
	}
	switch st { // nothing received after the invoke
	case keyMine:
		return mineAtStart, end, false
	case keyUnread:
		return unreadAtStart, end, false
	}
	return notMineOpen, end, false
}

// transition is the key's state after e, from st.
func (in *Input) transition(st keyState, e *Event, token string) keyState {
	switch {
	case isEndEvent(e.Value):
		return keyNotMine
	case !isSetEvent(e.Value):
		return st // a TTL change leaves the owner as it was
	case e.Owner == token:
		return keyMine
	case e.Owner == "":
		return keyUnread
	case in.takenBy(e, token):
		return keyForeign
	}
	return st // a value nobody was granted takes the lock from no one
}

// falseSuccessText tells the release, what ended its hold on the key and
// who set it next (before the release completed), when the stream shows it.
func (in *Input) falseSuccessText(r Release, end *Event, streams map[string][]*Event) string {
	text := fmt.Sprintf("false success: c%d's %s of %s at %s reported ok, but %s had ", r.Client, r.F, r.Key, ms(r.Invoke), r.Key)
	if isEndEvent(end.Value) {
		text += fmt.Sprintf("%s at %s (%s)", pastTense(end.Value), ms(end.Time), end.Node)
	} else {
		text += fmt.Sprintf("been set by %s at %s (%s)", in.ownerName(end.Owner), ms(end.Time), end.Node)
	}
	if isEndEvent(end.Value) {
		for _, f := range streams[end.Node] {
			if f.Time > end.Time && f.Time < r.Done && f.Key == r.Key && in.takenBy(f, r.Token) {
				text += fmt.Sprintf(" and been set by %s at %s", in.ownerName(f.Owner), ms(f.Time))
				break
			}
		}
	}
	return text
}

// foreignText names whose key a foreign renewal extended: the holder whose
// set last took the key on end's node before the renewal ended.
func (in *Input) foreignText(r Release, end *Event, streams map[string][]*Event) string {
	var by *Event
	for _, e := range streams[end.Node] {
		if e.Time > r.Done {
			break
		}
		if e.Key == r.Key && in.takenBy(e, r.Token) {
			by = e
		}
	}
	text := fmt.Sprintf("foreign renewal: c%d's %s of %s at %s reported ok, but throughout it %s was ", r.Client, r.F, r.Key, ms(r.Invoke), r.Key)
	if by == nil {
		return text + "another holder's"
	}
	return text + fmt.Sprintf("%s's (set at %s on %s)", in.ownerName(by.Owner), ms(by.Time), by.Node)
}

// takenBy says e set the key to another holder's token: one that an
// acquire was granted with. A set to a value nobody was granted (getset's
// loser overwriting the stamp with GETSET before it finds it lost) changes
// the value but takes the lock from no one: the algorithm's own ownership
// is not the value, so such a set is not counted against the holder.
//
// With stamp tokens (Options.StampTokens) no set is a taking: a loser
// computing its stamp in the same millisecond as an earlier holder writes
// that holder's value (seen on del-race-random × getset under load).
func (in *Input) takenBy(e *Event, token string) bool {
	if in.StampTokens || !isSetEvent(e.Value) || e.Owner == "" || e.Owner == token {
		return false
	}
	c, held := in.Owners[e.Owner]
	return held && c != AmbiguousOwner
}

func (in *Input) ownerName(token string) string {
	if c, ok := in.Owners[token]; ok && c != AmbiguousOwner {
		return fmt.Sprintf("c%d", c)
	}
	return fmt.Sprintf("another owner (%q)", token)
}

// isSetEvent says ev may have left the key a value (read in the event's
// Owner when the observer could). An observer's gap (history.GapEvent)
// counts: after it the key held anything or nothing, which no one read.
func isSetEvent(ev string) bool {
	switch ev {
	case "set", "hset", "hincrby", "hincrbyfloat", "restore", "gap":
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

// streamIndex is one node's stream indexed so that a release's walk can
// start at its invoke (judgeNodeFast) instead of at the stream's start:
// walking every stream from its start for every release made the check
// quadratic (3.4 s of a 2 s run's check, 141k entries, in lockstorm bench's
// runner row).
type streamIndex struct {
	evs []*Event
	// syncMaxN[i] is the greatest N of a sync among evs[:i] (-1: none).
	syncMaxN []int64
	keys     map[string]*keyStream
}

// keyStream is where one key's events are in a node's stream (positions
// in streamIndex.evs, ascending): all of them, its ends, the sets whose
// owner the observer could not read, the sets by owner, and the sets to a
// token some acquire was granted alone (what takenBy may count).
type keyStream struct {
	all, ends, unread, granted []int32
	byOwner                    map[string][]int32
}

func (in *Input) indexStream(evs []*Event) *streamIndex {
	ix := &streamIndex{evs: evs, syncMaxN: make([]int64, len(evs)+1), keys: map[string]*keyStream{}}
	ix.syncMaxN[0] = -1
	for i, e := range evs {
		ix.syncMaxN[i+1] = ix.syncMaxN[i]
		if e.Sync {
			ix.syncMaxN[i+1] = max(ix.syncMaxN[i], e.N)
			continue
		}
		ks := ix.keys[e.Key]
		if ks == nil {
			ks = &keyStream{byOwner: map[string][]int32{}}
			ix.keys[e.Key] = ks
		}
		at := int32(i)
		ks.all = append(ks.all, at)
		switch {
		case isEndEvent(e.Value):
			ks.ends = append(ks.ends, at)
		case !isSetEvent(e.Value):
		case e.Owner == "":
			ks.unread = append(ks.unread, at)
		default:
			ks.byOwner[e.Owner] = append(ks.byOwner[e.Owner], at)
			if c, held := in.Owners[e.Owner]; held && c != AmbiguousOwner {
				ks.granted = append(ks.granted, at)
			}
		}
	}
	return ix
}

// lastBefore is the greatest position in ps below pos (-1: none).
func lastBefore(ps []int32, pos int) int {
	i := sort.Search(len(ps), func(i int) bool { return int(ps[i]) >= pos })
	if i == 0 {
		return -1
	}
	return int(ps[i-1])
}

// judgeNodeFast is judgeNode, walking only from the release's invoke: the
// key's state there is set by the last entry before it that decides it
// (an end; a set to the releaser's token, to an unread owner, or to
// another granted token), and the entry that last ended a state that may
// have been the releaser's is the first deciding entry after the last set
// that made it so. A sync received before the invoke but sent after the
// release ended (impossible in a recorded history, whose syncs are sent
// before they are received) takes judgeNode's whole walk.
func (in *Input) judgeNodeFast(ix *streamIndex, r Release) (nodeVerdict, *Event, bool) {
	evs := ix.evs
	pos := sort.Search(len(evs), func(i int) bool { return evs[i].Time >= r.Invoke })
	if ix.syncMaxN[pos] > r.Done {
		return in.judgeNode(evs, r)
	}
	ks := ix.keys[r.Key]
	if ks == nil {
		return in.judgeFrom(evs, r, pos, keyNotMine, nil, false)
	}
	mine := max(lastBefore(ks.unread, pos), lastBefore(ks.byOwner[r.Token], pos))
	taken := -1
	if !in.StampTokens {
		for i := sort.Search(len(ks.granted), func(i int) bool { return int(ks.granted[i]) >= pos }) - 1; i >= 0; i-- {
			if g := int(ks.granted[i]); evs[g].Owner != r.Token {
				taken = g
				break
			}
		}
	}
	last := max(mine, taken, lastBefore(ks.ends, pos))
	st := keyNotMine
	if last >= 0 {
		st = in.transition(keyNotMine, evs[last], r.Token)
	}
	var end *Event
	if mine >= 0 {
		// The first entry after the releaser's last set that decides the
		// key otherwise ended it (a TTL change or a set to an ungranted
		// value decides nothing).
		i := sort.Search(len(ks.all), func(i int) bool { return int(ks.all[i]) > mine })
		for ; i < len(ks.all) && int(ks.all[i]) < pos; i++ {
			e := evs[ks.all[i]]
			if k := in.transition(keyMine, e, r.Token); k != keyMine && k != keyUnread {
				end = e
				break
			}
		}
	}
	// The state end ended was certainly the releaser's: its own token's
	// set, with no unread set after it.
	lapse := end != nil && lastBefore(ks.byOwner[r.Token], pos) > lastBefore(ks.unread, pos)
	return in.judgeFrom(evs, r, pos, st, end, lapse)
}

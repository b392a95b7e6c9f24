package checker

// overlapsWithoutStalls counts the overlapping pairs that remain when each
// hold is shortened by the harness's own stalls inside it. A holder whose
// critical section took 5 ms of its own and 300 ms of the harness being
// descheduled outlived a 200 ms lease because of the harness, not the
// lock: the clients are the harness's goroutines (or driven by them), and
// while it was not scheduled they could not finish, release or renew. If
// no overlap remains, the run proves nothing about the lock's exclusion.
func overlapsWithoutStalls(a *analysis) int {
	if len(a.stalls) == 0 {
		return -1
	}
	pairs := 0
	for _, kd := range a.keys {
		if len(kd.holds) < 2 {
			continue
		}
		short := &keyData{name: kd.name, holds: append([]holdRec(nil), kd.holds...)}
		for i := range short.holds {
			h := &short.holds[i]
			if h.To > h.From {
				h.To -= overlap(a.stalls, h.From, h.To)
				h.To = max(h.To, h.From)
			}
		}
		pairs += overlapPass(short).pairs
	}
	return pairs
}

// stallOverlapCheck counts the overlaps left without the harness's stalls
// (an unfenced lock's overlaps only: a fenced one's are not a verdict).
type stallOverlapCheck struct{}

func (stallOverlapCheck) name() string { return "overlaps without the harness's stalls" }

func (stallOverlapCheck) run(a *analysis) finding {
	pairs := 0
	for _, ov := range a.overlaps() {
		pairs += ov.pairs
	}
	if pairs > 0 && !a.opts.Fenced && len(a.stalls) > 0 {
		pairs = overlapsWithoutStalls(a)
	}
	return stallOverlapFinding(pairs)
}

// stallOverlapFinding is Result.OverlapsWithoutStalls.
type stallOverlapFinding int

func (f stallOverlapFinding) apply(r *Result) { r.OverlapsWithoutStalls = int(f) }

package client

import "sync"

// Tries collects when one Locker call's tries were sent: every send of
// the command the call opened with, on the same node (a library's retries
// inside one Acquire or Extend repeat it; the other commands of a try,
// the EVAL go-redis sends after an EVALSHA's NOSCRIPT among them, do not
// open a new one). The checker reads them as the call's tries
// (history.Op.Tries): a failed SET NX leaves no key event, so the servers
// cannot say how often a waiter asked.
type Tries struct {
	mu    sync.Mutex
	call  string
	first string
	at    []int64
}

// Begin starts collecting for call (lockimpl.CallAcquire, ...).
func (t *Tries) Begin(call string) {
	t.mu.Lock()
	t.call, t.first, t.at = call, "", nil
	t.mu.Unlock()
}

// Take ends the collection and returns the tries' send times.
func (t *Tries) Take() []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	at := t.at
	t.call, t.first, t.at = "", "", nil
	return at
}

// Sent notes a command sent at now in call, label its before point: a
// command of another call (a watchdog's, which carries none) is not the
// call's try.
func (t *Tries) Sent(call, label string, now int64) {
	if call == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if call != t.call {
		return
	}
	if t.first == "" {
		t.first = label
	}
	if label == t.first {
		t.at = append(t.at, now)
	}
}

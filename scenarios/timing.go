package scenarios

import (
	"fmt"
	"time"
)

// Phases is where a run's wall time went, phase by phase. Only Traffic is
// the spec's time (its duration, or less when the run stopped early); the
// rest is the harness's overhead, what a faster suite has to cut.
type Phases struct {
	// Setup starts the servers (replicas, Sentinels) and the links.
	Setup time.Duration `json:"setup_ns"`
	// Clients makes the clients, arms the faults and waits for client
	// processes to be ready.
	Clients time.Duration `json:"clients_ns"`
	// Traffic is the spec's duration, or until the early stop.
	Traffic time.Duration `json:"traffic_ns"`
	// Drain is the clients finishing the cycle they were in, after Traffic.
	Drain time.Duration `json:"drain_ns"`
	// Check completes the history and checks it.
	Check time.Duration `json:"check_ns"`
	// Teardown stops the clients, the links and the servers.
	Teardown time.Duration `json:"teardown_ns"`
}

// Total is the run's wall time.
func (p Phases) Total() time.Duration {
	return p.Setup + p.Clients + p.Traffic + p.Drain + p.Check + p.Teardown
}

// Overhead is the wall time outside the traffic.
func (p Phases) Overhead() time.Duration { return p.Total() - p.Traffic }

// Add sums two runs' phases (a suite's total).
func (p Phases) Add(q Phases) Phases {
	return Phases{Setup: p.Setup + q.Setup, Clients: p.Clients + q.Clients, Traffic: p.Traffic + q.Traffic,
		Drain: p.Drain + q.Drain, Check: p.Check + q.Check, Teardown: p.Teardown + q.Teardown}
}

// String is one line, in seconds.
func (p Phases) String() string {
	s := func(d time.Duration) float64 { return d.Seconds() }
	return fmt.Sprintf("set-up %.2f s, clients %.2f, traffic %.2f, drain %.2f, check %.2f, teardown %.2f",
		s(p.Setup), s(p.Clients), s(p.Traffic), s(p.Drain), s(p.Check), s(p.Teardown))
}

// phaseClock measures consecutive phases: each lap is the time since the
// previous one.
type phaseClock struct{ last time.Time }

func newPhaseClock() *phaseClock { return &phaseClock{last: time.Now()} }

// lap stores the time since the previous lap in *d.
func (c *phaseClock) lap(d *time.Duration) {
	now := time.Now()
	*d = now.Sub(c.last)
	c.last = now
}

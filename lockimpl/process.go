package lockimpl

// Process is implemented by a Locker whose client runs as an operating
// system process of its own (lockimpl/exec). The runner's client faults then
// act on that process instead of on goroutines: a pause is a real
// stop-the-world of every thread of the client, its renewal thread included;
// a crash is a real death, after which the kernel closes its sockets; a clock
// fault moves the wall clock the client's own runtime reads.
type Process interface {
	// Stop freezes the client process (SIGSTOP).
	Stop() error
	// Cont lets a stopped client process run again (SIGCONT).
	Cont() error
	// Kill ends the client process at once (SIGKILL): nothing is released,
	// nothing more is sent.
	Kill() error
	// SyncClock tells the Locker that its Env.Clock moved (a jump or a new
	// drift rate): the process must read the new time from its next clock
	// read on, not some milliseconds later.
	SyncClock()
}

// ProcessStats counts what went wrong between the harness and client
// processes. Each counted event ended a request with an unknown outcome.
type ProcessStats struct {
	// Starts is how many client processes were started.
	Starts int `json:"starts"`
	// Deaths counts processes that died on their own during a request.
	Deaths int `json:"deaths,omitempty"`
	// Malformed counts replies that broke the protocol.
	Malformed int `json:"malformed,omitempty"`
	// Timeouts counts requests that got no reply in time.
	Timeouts int `json:"timeouts,omitempty"`
}

// Add sums two counts.
func (s ProcessStats) Add(o ProcessStats) ProcessStats {
	return ProcessStats{Starts: s.Starts + o.Starts, Deaths: s.Deaths + o.Deaths,
		Malformed: s.Malformed + o.Malformed, Timeouts: s.Timeouts + o.Timeouts}
}

// Unknown is how many requests these events left with an unknown outcome.
func (s ProcessStats) Unknown() int { return s.Deaths + s.Malformed + s.Timeouts }

package spec

import (
	"syscall"
	"time"
)

// Limits bound what a spec may ask of the machine. A spec beyond them is
// refused at load, before anything starts, with the limit's name; the
// CLI's run flags raise each one where a user could mean it.
type Limits struct {
	// MaxNodes bounds the Redis masters of one run (each is a process).
	MaxNodes int
	// MaxHosts bounds the client hosts (each host has a proxy per node).
	MaxHosts int
	// MaxDuration bounds a run's duration.
	MaxDuration time.Duration
	// MinEvery is the shortest period of a repeated fault.
	MinEvery time.Duration
	// MaxHistory bounds the estimated history entries of a run.
	MaxHistory int64
	// OpenFiles is how many files the process may open (0: its
	// RLIMIT_NOFILE), checked against the descriptors a run needs.
	OpenFiles int
	// AllowExec lets the client programs that exec variants name start:
	// each is asked its hello at load and runs a process per client.
	// Without it a spec is data: a program is looked up but not started,
	// known by its command line only, and a run refuses it (NeedsConsent).
	AllowExec bool
}

// DefaultLimits are the limits of `lockstorm run` without flags (docs/spec.md).
func DefaultLimits() Limits {
	return Limits{MaxNodes: 16, MaxHosts: 256, MaxDuration: 10 * time.Minute, MinEvery: 10 * time.Millisecond, MaxHistory: 20_000_000}
}

// openFiles is the process's limit on open descriptors (Go raises the soft
// limit to the hard one at start-up).
func (l Limits) openFiles() int {
	if l.OpenFiles > 0 {
		return l.OpenFiles
	}
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 1 << 30
	}
	return int(r.Cur)
}

// Sizing of a run, for the limits: every client opens up to connsPerNode
// connections to each node (a command connection, plus the watchdog's or a
// subscriber's), and each costs three descriptors in this process (the
// client's socket, the proxy's accepted socket and its upstream socket).
const (
	connsPerNode    = 2
	fdsPerConn      = 3
	fdsReserve      = 64
	redisMaxClients = 10000 // redis-server's default maxclients
	// entriesPerCycle is a cycle's history entries (acquire, read, write,
	// release: invoke and completion each), stepsPerCycle the step entries
	// added when failpoints are recorded.
	entriesPerCycle = 8
	stepsPerCycle   = 16
	// minRTT and maxEntryRate bound how fast a run can produce history: a
	// loopback round trip through a proxy takes at least minRTT, and the
	// whole process does not record more than maxEntryRate entries a second.
	minRTT       = 100 * time.Microsecond
	maxEntryRate = 100_000
)

// fdsNeeded estimates the descriptors a run opens.
func (s *Spec) fdsNeeded(nodes int) int {
	hosts := s.hostCount()
	return fdsReserve + hosts*nodes + s.Replicas*nodes*(1+fdsPerConn) + s.Clients*nodes*connsPerNode*fdsPerConn + nodes*4
}

// hostCount is the number of client hosts (h1..hN).
func (s *Spec) hostCount() int {
	if s.Hosts > 0 {
		return s.Hosts
	}
	return min(s.Clients, 64)
}

// historyEstimate bounds the entries a run records: cycles at the fastest a
// client can go (its think time and shortest critical section, or four
// round trips), capped by ops, cycles and the process's recording rate,
// plus two entries per fault injection.
func (s *Spec) historyEstimate() int64 {
	per := int64(entriesPerCycle)
	if len(s.Failpoints) > 0 || s.Explore != nil {
		per += stepsPerCycle
	}
	rtt := max(2*s.Network.Latency, minRTT)
	cycle := max(s.Think+s.Workload.CSMin, 4*rtt)
	secs := s.Duration.Seconds()
	cycles := float64(s.Clients) * secs / cycle.Seconds()
	if s.Workload.Cycles > 0 {
		cycles = min(cycles, float64(s.Clients*s.Workload.Cycles))
	}
	if s.Ops > 0 {
		cycles = min(cycles, float64(s.Ops))
	}
	entries := min(cycles*float64(per), maxEntryRate*secs)
	for _, f := range s.AllFaults() {
		n := 1.0
		if f.Every > 0 {
			n += float64(s.Duration-f.At) / float64(f.Every)
		}
		entries += 2 * n
	}
	return int64(entries)
}

// checkBounds applies the defaults of clients, keys and client_timeout and
// refuses a run past the machine's limits.
func (v *validation) checkBounds() error {
	s, lim := v.s, v.s.limits
	if s.Duration > lim.MaxDuration {
		return v.bad("duration", "%v is above the limit of %v (raise it with --max-duration)", s.Duration, lim.MaxDuration)
	}
	if s.Clients == 0 {
		s.Clients = 1
	}
	if s.Keys == 0 {
		s.Keys = 1
	}
	if s.ClientTimeout == 0 {
		s.ClientTimeout = time.Second
	}
	if s.Hosts > s.Clients {
		return v.bad("hosts", "%d hosts for %d clients: hosts h%d.. would have no client", s.Hosts, s.Clients, s.Clients+1)
	}
	if s.hostCount() > lim.MaxHosts {
		return v.bad("hosts", "%d hosts is above the limit of %d (raise it with --max-hosts)", s.hostCount(), lim.MaxHosts)
	}
	if s.Nodes > lim.MaxNodes {
		return v.bad("nodes", "%d nodes is above the limit of %d redis-server processes (raise it with --max-nodes)", s.Nodes, lim.MaxNodes)
	}
	return nil
}

package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	execlock "github.com/lockstorm/lockstorm/lockimpl/exec"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// Drive-rate goals: lock cycles per second over SET NX PX requests per
// second (a cycle is two commands, so 0.5 is the ceiling).
const (
	GoalDriveDirect  = 0.35
	GoalDriveProxied = 0.25
)

// DriveConfig sets up DriveRate.
type DriveConfig struct {
	// Clients and Keys: 64 and 64 by default. Client i locks key i mod Keys.
	Clients, Keys int
	// RunnerKeys are the runner drive's keys (default 8 per client). The
	// runner's clients pick a random key per cycle: on as many keys as
	// clients (each other client holding its key for about half its
	// cycle), an acquire often finds its key held and retries after
	// retry_delay, a round trip and a millisecond of contention that the
	// other drives (a key per client) never meet. With 8 keys per client,
	// fewer than one key in 8 is held by another at any moment, and a
	// quick 2 s window still holds every key the twice the evidence
	// needs (checker.MinHoldsPerKey); with 64 per client some keys were
	// held once, and the run was inconclusive.
	RunnerKeys int
	// Duration is each drive measurement's window (default 5 s), after
	// Warmup (default 500 ms).
	Duration, Warmup time.Duration
	// SetRequests is redis-benchmark's -n (default 200000).
	SetRequests int
	// Impl is the lock on trial (default set-nx-px).
	Impl string
	// Runner adds the sub-row driven by scenarios.Run (recording and check).
	Runner bool
	// Exec, when set, adds the row for a lock served by client processes
	// (lockimpl/exec): this command line against ExecSame in process, both
	// with ExecClients clients on as many keys, direct.
	Exec        []string
	ExecSame    string
	ExecClients int
	Progress    Progress
}

func (c *DriveConfig) defaults() {
	if c.Clients <= 0 {
		c.Clients = 64
	}
	if c.Keys <= 0 {
		c.Keys = 64
	}
	if c.RunnerKeys <= 0 {
		c.RunnerKeys = 8 * c.Clients
	}
	if c.Duration <= 0 {
		c.Duration = 5 * time.Second
	}
	if c.Warmup <= 0 {
		c.Warmup = 500 * time.Millisecond
	}
	if c.SetRequests <= 0 {
		c.SetRequests = 200_000
	}
	if c.Impl == "" {
		c.Impl = "set-nx-px"
	}
}

// DriveStats is one drive measurement.
type DriveStats struct {
	Cycles     int64         // acquire + release pairs completed in the window
	Window     time.Duration // the measuring window
	Errors     int64         // acquires or releases that failed (any error)
	PerSec     float64       // Cycles / Window
	FirstError string
}

// DriveRate measures lock cycles per second of cfg.Impl against one real
// redis-server (spawned here), with no faults: (a) every client on its own
// direct connection, (b) every client through its own toxiproxy link (one
// link per client host, as the runner sets them up), and optionally (c)
// through scenarios.Run, which also records the history and checks it. The
// reference is SET NX PX requests per second from redis-benchmark with the
// same concurrency against the same server, taken before and after the lock
// measurements (their mean is the reference; both are in the note).
func DriveRate(ctx context.Context, cfg DriveConfig) (rows []Row, err error) {
	cfg.defaults()
	srv, err := cluster.StartRedisServers(ctx, cluster.Options{Nodes: 1})
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	addr := srv.Nodes()[0].Addr

	cfg.Progress.say("drive: reference SET NX PX rps (%d clients, %d requests)", cfg.Clients, cfg.SetRequests)
	ref1, how, err := SetRPS(ctx, addr, cfg.Clients, cfg.SetRequests)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}

	direct := make([]string, cfg.Clients)
	for i := range direct {
		direct[i] = addr
	}
	cfg.Progress.say("drive: %s direct, %v", cfg.Impl, cfg.Duration)
	d, err := DriveLocker(ctx, cfg.Impl, direct, cfg.Keys, cfg.Warmup, cfg.Duration)
	if err != nil {
		return nil, fmt.Errorf("direct: %w", err)
	}

	p, err := driveProxied(ctx, cfg, addr)
	if err != nil {
		return nil, err
	}

	var rr *RunnerStats
	if cfg.Runner {
		cfg.Progress.say("drive: %s through scenarios.Run, %v", cfg.Impl, cfg.Duration)
		rr, err = DriveRunner(ctx, cfg.Impl, cfg.Clients, cfg.RunnerKeys, cfg.Duration)
		if err != nil {
			return nil, fmt.Errorf("runner: %w", err)
		}
	}

	cfg.Progress.say("drive: reference SET NX PX rps again")
	ref2, _, err := SetRPS(ctx, addr, cfg.Clients, cfg.SetRequests)
	if err != nil {
		return nil, fmt.Errorf("reference: %w", err)
	}
	ref := (ref1 + ref2) / 2
	refNote := fmt.Sprintf("reference %s: %.0f before, %.0f after (mean %.0f)", how, ref1, ref2, ref)

	refs := driveRef{ref, ref1, ref2, refNote}
	rows = []Row{
		refs.row("1a", "drive/direct", fmt.Sprintf("drive %s, %d clients/%d keys, direct (Locker, no history)", cfg.Impl, cfg.Clients, cfg.Keys),
			d, GoalDriveDirect, fmt.Sprintf("%d cycles in %.1f s; %s", d.Cycles, d.Window.Seconds(), refNote)),
		refs.row("1b", "drive/proxied", fmt.Sprintf("drive %s, %d clients/%d keys, via %d toxiproxy links (Locker)", cfg.Impl, cfg.Clients, cfg.Keys, cfg.Clients),
			p, GoalDriveProxied, fmt.Sprintf("%d cycles in %.1f s; proxied/direct = %.2f", p.Cycles, p.Window.Seconds(), p.PerSec/d.PerSec)),
	}
	if len(cfg.Exec) > 0 {
		r, err := execRow(ctx, cfg, addr)
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		defer func() {
			if err == nil {
				rows = append(rows, r) // after 1c: the exec row comes last
			}
		}()
	}
	if rr != nil {
		rows = append(rows, runnerRow(cfg, rr, ref, p))
	}
	return rows, nil
}

// driveProxied drives the lock through one link per client host, as the
// runner sets them up.
func driveProxied(ctx context.Context, cfg DriveConfig, addr string) (DriveStats, error) {
	cfg.Progress.say("drive: %s through %d proxies, %v", cfg.Impl, cfg.Clients, cfg.Duration)
	nw := nemesis.NewNetwork()
	defer nw.Close()
	proxied := make([]string, cfg.Clients)
	for i := range proxied {
		l, err := nw.AddLink(fmt.Sprintf("h%d", i+1), "n1", addr)
		if err != nil {
			return DriveStats{}, err
		}
		proxied[i] = l.Addr
	}
	p, err := DriveLocker(ctx, cfg.Impl, proxied, cfg.Keys, cfg.Warmup, cfg.Duration)
	if err != nil {
		return DriveStats{}, fmt.Errorf("proxied: %w", err)
	}
	return p, nil
}

// driveRef is redis-benchmark's reference rate (the mean of the runs
// before and after) that the drive rows are ratios of.
type driveRef struct {
	mean, before, after float64
	note                string
}

func (d driveRef) row(id, name, measure string, s DriveStats, goal float64, note string) Row {
	r := Row{Row: id, Name: name, Measure: measure, Figure: s.PerSec, Unit: "cycles/s",
		Reference: d.mean, RefUnit: "SET/s", RefName: "redis-benchmark", Ratio: s.PerSec / d.mean,
		Extra: map[string]float64{"cycles": float64(s.Cycles), "window_s": s.Window.Seconds(), "errors": float64(s.Errors),
			"ref_before": d.before, "ref_after": d.after}}
	r.Goal = "≥ " + strconv.FormatFloat(goal, 'f', 2, 64)
	r.judge(r.Ratio >= goal && s.Errors == 0)
	r.Note = note
	if s.Errors > 0 {
		r.Note += fmt.Sprintf("; %d errors, first: %s", s.Errors, s.FirstError)
	}
	return r
}

// runnerRow is the whole runner's rate (recording, points, links, check).
func runnerRow(cfg DriveConfig, rr *RunnerStats, ref float64, p DriveStats) Row {
	r := Row{Row: "1c", Name: "drive/runner", Measure: fmt.Sprintf("drive %s, %d clients/%d keys, scenarios.Run (proxied, recorded, checked)", cfg.Impl, cfg.Clients, cfg.RunnerKeys),
		Figure: rr.PerSec, Unit: "cycles/s", Reference: ref, RefUnit: "SET/s", RefName: "redis-benchmark", Ratio: rr.PerSec / ref,
		Status: Info, Extra: map[string]float64{"cycles": float64(rr.Cycles), "window_s": rr.Window.Seconds(), "ops_recorded": float64(rr.Ops),
			"check_s": rr.Check.Seconds(), "run_elapsed_s": rr.Elapsed.Seconds(), "acquire_attempts": float64(rr.Attempts)}}
	r.Note = fmt.Sprintf("%d cycles in %.1f s of traffic, %d ops recorded, verdict %s; runner/proxied = %.2f; checker.Check on that history %.2f s; "+
		"Run's Elapsed %.1f s (traffic + grace + check); the runner picks a random key per cycle, so clients may contend (%d acquire attempts on %d keys; retry_delay 1ms)",
		rr.Cycles, rr.Window.Seconds(), rr.Ops, rr.Verdict, rr.PerSec/p.PerSec, rr.Check.Seconds(), rr.Elapsed.Seconds(), rr.Attempts, cfg.RunnerKeys)
	return r
}

var rpsRe = regexp.MustCompile(`([0-9]+(?:\.[0-9]+)?) requests per second`)

// ParseRPS reads the requests-per-second figure from redis-benchmark -q
// output (the last one, after the \r-separated progress lines).
func ParseRPS(out []byte) (float64, error) {
	m := rpsRe.FindAllSubmatch(out, -1)
	if len(m) == 0 {
		return 0, fmt.Errorf("no \"requests per second\" in redis-benchmark output %q", tailBytes(out, 200))
	}
	return strconv.ParseFloat(string(m[len(m)-1][1]), 64)
}

func tailBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// SetRPS measures SET key x NX PX 10000 requests per second against addr
// with the given concurrency, with redis-benchmark when installed (random
// keys from 100000, no pipelining), else from Go with one goroutine and
// connection per client. how names the tool used.
func SetRPS(ctx context.Context, addr string, clients, requests int) (rps float64, how string, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, "", err
	}
	if bin, err := exec.LookPath("redis-benchmark"); err == nil {
		cmd := exec.CommandContext(ctx, bin, "-h", host, "-p", port, "-c", strconv.Itoa(clients), "-n", strconv.Itoa(requests),
			"-r", "100000", "-P", "1", "-q", "SET", "__rand_int__", "x", "NX", "PX", "10000")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return 0, "", fmt.Errorf("redis-benchmark: %w: %s", err, tailBytes(out.Bytes(), 300))
		}
		rps, err := ParseRPS(out.Bytes())
		return rps, "redis-benchmark -c " + strconv.Itoa(clients), err
	}
	rps, err = goSetRPS(ctx, addr, clients, requests)
	return rps, "Go SET NX PX driver (redis-benchmark not installed)", err
}

// goSetRPS is SetRPS without redis-benchmark.
func goSetRPS(ctx context.Context, addr string, clients, requests int) (float64, error) {
	var left atomic.Int64
	left.Store(int64(requests))
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	rdbs := make([]*redis.Client, clients)
	for i := range rdbs {
		rdbs[i] = redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, Protocol: 2, DisableIdentity: true})
		defer rdbs[i].Close()
		if err := rdbs[i].Ping(ctx).Err(); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for i := range rdbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			for left.Add(-1) >= 0 {
				err := rdbs[i].Do(ctx, "SET", "key:"+strconv.Itoa(rng.IntN(100000)), "x", "NX", "PX", 10000).Err()
				if err != nil && !errors.Is(err, redis.Nil) {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return float64(requests) / time.Since(start).Seconds(), firstErr
}

// newBenchClient is a connection set up as the runner sets up its own.
func newBenchClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, PoolSize: 4,
		ContextTimeoutEnabled: true, Protocol: 2, DialerRetries: 1, DisableIdentity: true})
}

// execRow drives the client program cfg.Exec (a lock client process per
// client, speaking lockimpl/exec's protocol) and the in-process lock
// cfg.ExecSame with the same clients and keys: what a pipe round trip and
// an interpreter per client cost against the same algorithm in Go.
func execRow(ctx context.Context, cfg DriveConfig, addr string) (Row, error) {
	n := cfg.ExecClients
	if n <= 0 {
		n = 8
	}
	same := cfg.ExecSame
	if same == "" {
		same = "set-nx-px"
	}
	info, err := execlock.Register(ctx, cfg.Exec)
	if err != nil {
		return Row{}, err
	}
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = addr
	}
	cfg.Progress.say("drive: %s in %d client processes, %v", info.Name, n, cfg.Duration)
	// The warm-up covers the processes' start-up (an interpreter loading
	// its Redis library), which is not lock work.
	x, err := DriveLocker(ctx, info.Name, addrs, n, cfg.Warmup+3*time.Second, cfg.Duration)
	if err != nil {
		return Row{}, err
	}
	cfg.Progress.say("drive: %s in process, %d clients, %v", same, n, cfg.Duration)
	g, err := DriveLocker(ctx, same, addrs, n, cfg.Warmup, cfg.Duration)
	if err != nil {
		return Row{}, err
	}
	r := Row{Row: "1d", Name: "drive/exec", Measure: fmt.Sprintf("drive %s as %d client processes (lockimpl/exec), %d keys, direct", info.Name, n, n),
		Figure: x.PerSec, Unit: "cycles/s", Reference: g.PerSec, RefUnit: "cycles/s", RefName: same + " in process", Ratio: x.PerSec / g.PerSec,
		Status: Info, Extra: map[string]float64{"cycles": float64(x.Cycles), "errors": float64(x.Errors), "in_process_cycles": float64(g.Cycles)}}
	r.Note = fmt.Sprintf("%d cycles in %.1f s through client processes (%s) vs %d in process (%s): ratio %.2f",
		x.Cycles, x.Window.Seconds(), strings.Join(cfg.Exec, " "), g.Cycles, same, x.PerSec/g.PerSec)
	if x.Errors > 0 {
		r.Note += fmt.Sprintf("; %d errors, first: %s", x.Errors, x.FirstError)
	}
	return r, nil
}

// driveSeq numbers the drives of this process (their key names).
var driveSeq atomic.Int64

// driveLockers makes one locker of impl per address, each on its own
// connection; closeAll closes the connections and stops the lockers'
// helpers (watchdogs, client processes), however far it got.
func driveLockers(ctx context.Context, impl string, addrs []string) (lockers []lockimpl.Locker, closeAll func(), err error) {
	var clients []*redis.Client
	closeAll = func() {
		for _, l := range lockers {
			if c, ok := l.(io.Closer); ok {
				c.Close()
			}
		}
		for _, c := range clients {
			c.Close()
		}
	}
	info, err := lockimpl.Lookup(impl)
	if err != nil {
		return nil, closeAll, err
	}
	hub := lockimpl.NewHub()
	opts := lockimpl.Options{TTL: 10 * time.Second, RetryDelay: time.Millisecond, WaitTimeout: 10 * time.Second}
	for i, a := range addrs {
		rdb := newBenchClient(a)
		clients = append(clients, rdb)
		if err := rdb.Ping(ctx).Err(); err != nil {
			return lockers, closeAll, fmt.Errorf("client %d: %w", i, err)
		}
		env := lockimpl.Env{Client: i, Nodes: []redis.UniversalClient{rdb}, Clock: lockimpl.NewSkewClock(0),
			FP: lockimpl.NewFailpoints(hub, i), Rand: rand.New(rand.NewPCG(1, uint64(i)+1))}
		l, err := info.New(env, opts)
		if err != nil {
			return lockers, closeAll, err
		}
		lockers = append(lockers, l)
	}
	return lockers, closeAll, nil
}

// DriveLocker runs len(addrs) clients of impl, client i connected to
// addrs[i] and locking key i mod keys, acquire then release in a tight loop
// with no history recording, and counts the cycles completed in window
// after warmup.
func DriveLocker(ctx context.Context, impl string, addrs []string, keys int, warmup, window time.Duration) (DriveStats, error) {
	lockers, closeAll, err := driveLockers(ctx, impl, addrs)
	defer closeAll()
	if err != nil {
		return DriveStats{}, err
	}
	var cycles, errs atomic.Int64
	var firstErr atomic.Value
	// Each drive locks keys of its own: a drive stopped mid-cycle leaves
	// some keys held for their TTL (10 s), and a drive that reused them
	// on the same server would spend its window retrying on them (the
	// proxied drive follows the direct one on one server).
	prefix := "bench:" + strconv.FormatInt(driveSeq.Add(1), 10) + ":lock:"
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := prefix + strconv.Itoa(i%keys)
			for runCtx.Err() == nil {
				lease, err := l.Acquire(runCtx, key)
				if err == nil {
					err = l.Release(runCtx, lease)
				}
				if err != nil {
					if runCtx.Err() != nil {
						return
					}
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				cycles.Add(1)
			}
		}()
	}
	sleep := func(d time.Duration) error { return lockimpl.SleepCtx(ctx, d) }
	if err := sleep(warmup); err != nil {
		stop()
		wg.Wait()
		return DriveStats{}, err
	}
	c0, e0, t0 := cycles.Load(), errs.Load(), time.Now()
	err = sleep(window)
	c1, e1, t1 := cycles.Load(), errs.Load(), time.Now()
	stop()
	wg.Wait()
	if err != nil {
		return DriveStats{}, err
	}
	s := DriveStats{Cycles: c1 - c0, Window: t1.Sub(t0), Errors: e1 - e0}
	s.PerSec = float64(s.Cycles) / s.Window.Seconds()
	if v, ok := firstErr.Load().(string); ok {
		s.FirstError = v
	}
	return s, nil
}

// RunnerStats is a drive through scenarios.Run.
type RunnerStats struct {
	DriveStats
	Ops      int           // history entries recorded
	Attempts int           // acquire attempts (Result.Attempts)
	Check    time.Duration // checker.Check on the run's history, timed again here
	Elapsed  time.Duration // Outcome.Elapsed: traffic, grace and check
	Verdict  string
}

// DriveSpec is the in-memory scenario DriveRunner runs: no faults, no
// latency, an empty critical section.
func DriveSpec(impl string, clients, keys int, d time.Duration) string {
	return fmt.Sprintf(`name: bench-drive
description: lockstorm bench drive rate, no faults
mode: random
gated: false
seed: 1
clients: %d
keys: %d
duration: %s
client_timeout: 2s
lock:
  ttl: 10s
  retry_delay: 1ms
  wait_timeout: 10s
workload:
  cs_min: 0s
  cs_max: 0s
impls: [%s]
`, clients, keys, d, impl)
}

// DriveRunner runs DriveSpec through scenarios.Run on a real redis-server
// and counts the cycles (release ok entries) in the history, over the time
// from the first acquire invoke to the last release completion.
func DriveRunner(ctx context.Context, impl string, clients, keys int, d time.Duration) (*RunnerStats, error) {
	spec, err := spec.Parse("bench-drive.yaml", []byte(DriveSpec(impl, clients, keys, d)))
	if err != nil {
		return nil, err
	}
	out, err := scenarios.Run(ctx, spec, scenarios.Config{Impl: impl, Backend: cluster.RedisServer})
	if err != nil {
		return nil, err
	}
	s := &RunnerStats{Ops: len(out.History), Attempts: out.Result.Attempts, Elapsed: out.Elapsed, Verdict: out.Result.Verdict}
	first, last := int64(-1), int64(0)
	for _, op := range out.History {
		if op.Client < 0 {
			continue
		}
		if first < 0 && op.F == history.FAcquire && op.Type == history.Invoke {
			first = op.Time
		}
		if op.F == history.FRelease && op.Type == history.Ok {
			s.Cycles++
			last = op.Time
		}
		if op.Type == history.Info || op.Type == history.Fail && op.F == history.FRelease {
			s.Errors++
		}
	}
	if first >= 0 && last > first {
		s.Window = time.Duration(last - first)
		s.PerSec = float64(s.Cycles) / s.Window.Seconds()
	}
	start := time.Now()
	checker.Check(out.History, out.CheckOptions)
	s.Check = time.Since(start)
	return s, nil
}

package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/lockstorm/lockstorm/internal/clock"
)

// Servers is a cluster of spawned redis-server processes.
type Servers struct {
	procs []*Process
	root  string
	bin   string
	shim  string // clock shim path, "" without Options.ServerClock
	extra func(name string) []string
	log   *slog.Logger
	// cluster, when set, makes every server a Redis Cluster node.
	cluster *ClusterOptions

	mu        sync.Mutex // guards replicas, sentinels and closed
	replicas  []*Process
	sentinels []*Process
	closed    bool

	closeOnce sync.Once
	closeErr  error
}

// StartRedisServers spawns o.Nodes redis-server processes on free loopback
// ports, each in its own temporary directory with persistence off (a restart
// loses the data, as the failover and restart cases need), and waits until each
// answers PING. With o.ServerClock each runs under the clock shim (built on
// demand, see EnsureShim) so SetClockOffset can move its wall clock. On any
// error everything started so far is stopped.
func StartRedisServers(ctx context.Context, o Options) (*Servers, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	bin, err := ServerBinary(o.Server)
	if err != nil {
		return nil, err
	}
	shim := ""
	if o.ServerClock {
		shim = o.ClockShim
		if shim == "" {
			// make builds the shim and exports its path; without make the
			// shim is built on demand into the user's cache.
			shim = os.Getenv(clock.ShimEnv)
		}
		if shim == "" {
			if shim, err = clock.EnsureShim(""); err != nil {
				return nil, err
			}
		} else if _, err := os.Stat(shim); err != nil {
			return nil, fmt.Errorf("clock shim: %w", err)
		}
	}
	sweepStale()
	root, err := os.MkdirTemp("", fmt.Sprintf("lockstorm-redis-%d-", os.Getpid()))
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	s := &Servers{root: root, bin: bin, shim: shim, log: o.Log, extra: o.ExtraArgs, cluster: o.Cluster}
	for i := 0; i < o.Nodes; i++ {
		p, err := s.newProcess(fmt.Sprintf("n%d", i+1))
		if err != nil {
			s.Close()
			return nil, err
		}
		s.procs = append(s.procs, p)
	}
	if err := startAll(ctx, s.procs, (*Process).startOnFreePort); err != nil {
		s.Close()
		return nil, err
	}
	for _, p := range s.procs {
		o.Log.Debug("redis-server started", "node", p.Name, "addr", p.Addr, "pid", p.Pid())
	}
	return s, nil
}

// startAll starts procs at once with start and waits for every one: their
// start-ups (exec, loading, the first PONG) overlap instead of adding up
// over the nodes. It returns the first error in procs' order; the caller
// stops whatever did start (Servers.Close).
func startAll(ctx context.Context, procs []*Process, start func(*Process, context.Context) error) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = start(p, ctx)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// newProcess prepares (does not start) a server named name on a free port
// with its own directory under the cluster root.
func (s *Servers) newProcess(name string) (*Process, error) {
	// Reserved until the start, as a Sentinel's: a free port handed out
	// and left unbound is anyone's (another run's server, an outgoing
	// connection's local port) until the server binds it.
	ln, port, err := reservePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(s.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		ln.Close()
		return nil, fmt.Errorf("node dir: %w", err)
	}
	p := &Process{
		Node:     Node{Name: name, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))},
		Port:     port,
		Dir:      dir,
		reserved: ln,
		// repl-diskless-sync-delay 0: Redis 7 waits 5 s by default before a
		// full sync to batch replicas, which would only slow failover runs.
		Args: []string{s.bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--daemonize", "no",
			"--protected-mode", "yes", "--logfile", filepath.Join(dir, "redis.log"),
			"--repl-diskless-sync-delay", "0"},
	}
	if s.cluster != nil {
		bl, bport, err := reservePort()
		if err != nil {
			p.release()
			return nil, err
		}
		p.BusPort, p.busReserved = bport, bl
		p.Args = append(p.Args, s.cluster.args(bport)...)
	}
	if s.extra != nil {
		p.Args = append(p.Args, s.extra(name)...)
	}
	if s.shim != "" {
		path := filepath.Join(dir, "clock")
		c, err := clock.Open(path)
		if err != nil {
			p.release()
			return nil, err
		}
		p.clock = c
		p.Env = append(p.Env, "LD_PRELOAD="+s.shim, clock.FileEnv+"="+path)
	}
	return p, nil
}

// Kind implements Cluster.
func (s *Servers) Kind() string { return RedisServer }

// Nodes implements Cluster.
func (s *Servers) Nodes() []Node {
	out := make([]Node, len(s.procs))
	for i, p := range s.procs {
		out[i] = p.Node
	}
	return out
}

// Procs returns the processes, for faults that kill, pause or restart them.
func (s *Servers) Procs() []*Process { return s.procs }

// Close stops every server, replica and Sentinel by process group with
// SIGKILL, at once, and removes the temporary directories. Nothing is
// graceful: persistence is off and the data is thrown away, and a SIGTERM
// would cost a cron tick (100 ms) per server, or a master's wait for its
// lagging replicas (shutdown-timeout), at the end of every run.
func (s *Servers) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		all := append(append(append([]*Process(nil), s.procs...), s.replicas...), s.sentinels...)
		s.mu.Unlock()
		errs := make([]error, len(all))
		var wg sync.WaitGroup
		for i, p := range all {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = p.Stop()
			}()
		}
		wg.Wait()
		for _, p := range all {
			p.mu.Lock()
			p.release()
			p.mu.Unlock()
			if p.clock != nil {
				if err := p.clock.Close(); err != nil {
					errs = append(errs, err)
				}
			}
		}
		if err := os.RemoveAll(s.root); err != nil {
			errs = append(errs, err)
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// sweepStale removes the temporary directories of harnesses that were
// killed outright (SIGKILL leaves no chance to clean up): their names carry
// the owner's pid, and a directory whose owner is gone is garbage.
func sweepStale() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "lockstorm-redis-*-*"))
	for _, d := range dirs {
		parts := strings.SplitN(strings.TrimPrefix(filepath.Base(d), "lockstorm-redis-"), "-", 2)
		pid, err := strconv.Atoi(parts[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(d)
		}
	}
}

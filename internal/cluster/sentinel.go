package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// SentinelOptions configure one Sentinel process (redis-server --sentinel,
// the same installed binary as the servers).
type SentinelOptions struct {
	// Masters are the masters it monitors: the name clients ask for and the
	// address Sentinel dials (in the Sentinel topology: a router in front of
	// the server, so Sentinel's own traffic goes through links of its own).
	Masters []Node
	// Quorum is how many Sentinels must agree a master is down (ODOWN).
	Quorum int
	// DownAfter is down-after-milliseconds: how long a master (or replica,
	// or Sentinel) may go without a valid PING reply before it is SDOWN.
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout: it bounds a failover and spaces
	// two attempts on the same master (2×).
	FailoverTimeout time.Duration
	// SourceAddr, when set, is the IP its outgoing connections come from
	// (bind-source-addr), so that whoever accepts them can tell this
	// Sentinel apart from the other processes on loopback.
	SourceAddr string
	// Announce, when set, is the host:port it tells the other Sentinels
	// and the clients to reach it at (sentinel announce-ip/announce-port).
	Announce string
}

// AddSentinel starts one Sentinel process (named s1, s2, ...; its own
// directory holding the sentinel.conf it rewrites; a free loopback port;
// its own process group and Pdeathsig like every server, so it never
// outlives lockstorm) and returns once it answers PING. Close stops it with
// the rest.
func (s *Servers) AddSentinel(ctx context.Context, o SentinelOptions) (*Process, error) {
	if len(o.Masters) == 0 || o.Quorum < 1 {
		return nil, errors.New("add sentinel: needs masters and a quorum of at least 1")
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errors.New("add sentinel: cluster closed")
	}
	name := fmt.Sprintf("s%d", len(s.sentinels)+1)
	port, err := FreePort()
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	dir := filepath.Join(s.root, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("sentinel dir: %w", err)
	}
	conf := filepath.Join(dir, "sentinel.conf")
	p := &Process{
		Node: Node{Name: name, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))},
		Port: port, Dir: dir,
		Args: []string{s.bin, conf, "--sentinel"},
	}
	s.sentinels = append(s.sentinels, p) // registered before it starts: Close stops it whatever happens
	s.mu.Unlock()

	if err := os.WriteFile(conf, []byte(sentinelConf(p, o)), 0o644); err != nil {
		return nil, fmt.Errorf("%s: write sentinel.conf: %w", name, err)
	}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	s.log.Debug("sentinel started", "node", p.Name, "addr", p.Addr, "announce", o.Announce, "pid", p.Pid())
	return p, nil
}

// sentinelConf writes the configuration; protected mode is off because the
// other processes connect from loopback addresses other than 127.0.0.1
// (their source addresses), which protected mode refuses; every process
// binds 127.0.0.1 only, so nothing is reachable from outside.
func sentinelConf(p *Process, o SentinelOptions) string {
	var b strings.Builder
	line := func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) }
	line("port %d", p.Port)
	line("bind 127.0.0.1")
	line("protected-mode no")
	line("daemonize no")
	line("dir %s", p.Dir)
	line("logfile %s", filepath.Join(p.Dir, "redis.log"))
	if o.SourceAddr != "" {
		line("bind-source-addr %s", o.SourceAddr)
	}
	if host, port, err := net.SplitHostPort(o.Announce); err == nil {
		line("sentinel announce-ip %s", host)
		line("sentinel announce-port %s", port)
	}
	for _, m := range o.Masters {
		host, port, _ := net.SplitHostPort(m.Addr)
		line("sentinel monitor %s %s %s %d", m.Name, host, port, o.Quorum)
		if o.DownAfter > 0 {
			line("sentinel down-after-milliseconds %s %d", m.Name, max(o.DownAfter.Milliseconds(), 1))
		}
		if o.FailoverTimeout > 0 {
			line("sentinel failover-timeout %s %d", m.Name, max(o.FailoverTimeout.Milliseconds(), 1))
		}
		line("sentinel parallel-syncs %s 1", m.Name)
	}
	return b.String()
}

// Sentinels lists the Sentinels added with AddSentinel, in order.
func (s *Servers) Sentinels() []*Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Process(nil), s.sentinels...)
}

// SentinelMaster returns SENTINEL MASTER name as a field map (ip, port,
// flags, num-slaves, num-other-sentinels, quorum, ...), asked of the
// Sentinel p directly (not through any link).
func (p *Process) SentinelMaster(name string) (map[string]string, error) {
	v, err := do(p.Addr, adminTimeout, "SENTINEL", "MASTER", name)
	if err != nil {
		return nil, fmt.Errorf("%s: SENTINEL MASTER %s: %w", p.Name, name, err)
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: SENTINEL MASTER %s: unexpected reply %T", p.Name, name, v)
	}
	out := map[string]string{}
	for i := 0; i+1 < len(arr); i += 2 {
		k, _ := arr[i].(string)
		val, _ := arr[i+1].(string)
		out[k] = val
	}
	return out, nil
}

// MasterAddr is SENTINEL GET-MASTER-ADDR-BY-NAME name: where this Sentinel
// tells clients the master is.
func (p *Process) MasterAddr(name string) (string, error) {
	v, err := do(p.Addr, adminTimeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
	if err != nil {
		return "", fmt.Errorf("%s: get-master-addr-by-name %s: %w", p.Name, name, err)
	}
	arr, ok := v.([]any)
	if !ok || len(arr) != 2 {
		return "", fmt.Errorf("%s: get-master-addr-by-name %s: unexpected reply %v", p.Name, name, v)
	}
	host, _ := arr[0].(string)
	port, _ := arr[1].(string)
	return net.JoinHostPort(host, port), nil
}

// WaitSentinelsReady waits until every Sentinel sees each master as up
// (flags exactly "master"), knows at least replicas replicas of it and all
// the other Sentinels: before that a failover could not happen (no replica
// to promote, no quorum), so a run must not start earlier. Sentinels find
// replicas in the master's INFO at once, and each other through hello
// messages published every 2 s.
func WaitSentinelsReady(ctx context.Context, sentinels []*Process, masters []string, replicas int) error {
	var last error
	for {
		last = nil
	check:
		for _, s := range sentinels {
			for _, m := range masters {
				info, err := s.SentinelMaster(m)
				if err != nil {
					last = err
					break check
				}
				slaves, _ := strconv.Atoi(info["num-slaves"])
				others, _ := strconv.Atoi(info["num-other-sentinels"])
				if info["flags"] != "master" || slaves < replicas || others < len(sentinels)-1 {
					last = fmt.Errorf("%s on %s: flags %q, %d replicas, %d other sentinels", s.Name, m, info["flags"], slaves, others)
					break check
				}
			}
		}
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for sentinels: %w (last: %v)", ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	// ID, when set, is its run id (sentinel myid: 40 hex digits, see
	// NewSentinelID); Sentinel draws one at random otherwise.
	ID string
	// Peers are the other Sentinels it knows from the start (known-sentinel
	// lines, as Sentinel itself writes them in its sentinel.conf once it has
	// met them), so that it need not wait for their hello messages (every
	// 2 s) to count them. A peer's hellos then only confirm what it knows.
	Peers []Peer
}

// Peer is another Sentinel: the address it announces and its run id.
type Peer struct {
	Addr, ID string
}

// NewSentinelID draws a Sentinel run id (40 hex digits), as Sentinel draws
// its own at its first start.
func NewSentinelID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// AddSentinel starts one Sentinel process (named s1, s2, ...; its own
// directory holding the sentinel.conf it rewrites; a free loopback port;
// its own process group and Pdeathsig like every server, so it never
// outlives lockstorm) and returns once it answers PING. Close stops it with
// the rest.
func (s *Servers) AddSentinel(ctx context.Context, o SentinelOptions) (*Process, error) {
	ps, err := s.AddSentinels(ctx, []SentinelOptions{o})
	if err != nil {
		return nil, err
	}
	return ps[0], nil
}

// AddSentinels starts one Sentinel per options, named in their order, at
// once: their start-ups overlap. It returns once every one answers PING.
func (s *Servers) AddSentinels(ctx context.Context, opts []SentinelOptions) ([]*Process, error) {
	ps, err := s.NewSentinels(opts)
	if err != nil {
		return nil, err
	}
	if err := StartSentinels(ctx, ps); err != nil {
		return nil, err
	}
	return ps, nil
}

// StartSentinels starts Sentinels prepared by NewSentinels, at once, and
// returns once every one answers PING. A Sentinel whose port was taken
// meanwhile (by any socket: an outgoing connection's local port is drawn
// from the same range as a free port) moves to a free one, like a server
// (--port on its command line overrides its sentinel.conf): whoever
// pointed at the old address must follow its Addr.
func StartSentinels(ctx context.Context, ps []*Process) error {
	return startAll(ctx, ps, (*Process).startOnFreePort)
}

// NewSentinels prepares (does not start) one Sentinel per options, named in
// their order: their ports are known before they start, so whatever must
// reach them (links between them) can be in place at their first dial.
// StartSentinels starts them; Close stops them with the rest, started or not.
func (s *Servers) NewSentinels(opts []SentinelOptions) ([]*Process, error) {
	var ps []*Process
	for _, o := range opts {
		p, err := s.newSentinel(o)
		if err != nil {
			return nil, err
		}
		s.log.Debug("sentinel prepared", "node", p.Name, "addr", p.Addr, "announce", o.Announce)
		ps = append(ps, p)
	}
	return ps, nil
}

// newSentinel prepares one Sentinel (its name, port, directory and
// sentinel.conf) and registers it, so that Close stops it whatever happens.
func (s *Servers) newSentinel(o SentinelOptions) (*Process, error) {
	if len(o.Masters) == 0 || o.Quorum < 1 {
		return nil, errors.New("add sentinel: needs masters and a quorum of at least 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errors.New("add sentinel: cluster closed")
	}
	name := fmt.Sprintf("s%d", len(s.sentinels)+1)
	// The port stays reserved until the Sentinel starts: links to it are
	// made meanwhile, and a link listening on it would take it.
	ln, port, err := reservePort()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(s.root, name)
	conf := filepath.Join(dir, "sentinel.conf")
	p := &Process{
		Node: Node{Name: name, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))},
		Port: port, Dir: dir, reserved: ln,
		Args: []string{s.bin, conf, "--sentinel", "--port", strconv.Itoa(port)},
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		p.release()
		return nil, fmt.Errorf("sentinel dir: %w", err)
	}
	if err := os.WriteFile(conf, []byte(sentinelConf(p, o)), 0o644); err != nil {
		p.release()
		return nil, fmt.Errorf("%s: write sentinel.conf: %w", name, err)
	}
	s.sentinels = append(s.sentinels, p)
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
		for _, peer := range o.Peers {
			host, port, _ := net.SplitHostPort(peer.Addr)
			line("sentinel known-sentinel %s %s %s %s", m.Name, host, port, peer.ID)
		}
	}
	if o.ID != "" {
		line("sentinel myid %s", o.ID)
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
	out, ok := fieldMap(v)
	if !ok {
		return nil, fmt.Errorf("%s: SENTINEL MASTER %s: unexpected reply %T", p.Name, name, v)
	}
	return out, nil
}

// SentinelPeers returns SENTINEL SENTINELS name: one field map (ip, port,
// runid, flags, ...) per other Sentinel p knows for that master.
func (p *Process) SentinelPeers(name string) ([]map[string]string, error) {
	v, err := do(p.Addr, adminTimeout, "SENTINEL", "SENTINELS", name)
	if err != nil {
		return nil, fmt.Errorf("%s: SENTINEL SENTINELS %s: %w", p.Name, name, err)
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: SENTINEL SENTINELS %s: unexpected reply %T", p.Name, name, v)
	}
	var out []map[string]string
	for _, e := range arr {
		m, ok := fieldMap(e)
		if !ok {
			return nil, fmt.Errorf("%s: SENTINEL SENTINELS %s: unexpected entry %T", p.Name, name, e)
		}
		out = append(out, m)
	}
	return out, nil
}

// fieldMap reads a flat RESP2 array of field names and values.
func fieldMap(v any) (map[string]string, bool) {
	arr, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := map[string]string{}
	for i := 0; i+1 < len(arr); i += 2 {
		k, _ := arr[i].(string)
		val, _ := arr[i+1].(string)
		out[k] = val
	}
	return out, true
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
// messages published every 2 s, unless their sentinel.conf names them
// (SentinelOptions.Peers). Every peer's flags reading exactly "sentinel"
// (linked, not down) is not waited for: with a short down_after a busy
// machine flaps them, and a failover needs only the quorum.
func WaitSentinelsReady(ctx context.Context, sentinels []*Process, masters []string, replicas int) error {
	for {
		last := sentinelsNotReady(sentinels, masters, replicas)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for sentinels: %w (last: %v)", ctx.Err(), last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// sentinelsNotReady says why the Sentinels are not ready yet, or nil.
func sentinelsNotReady(sentinels []*Process, masters []string, replicas int) error {
	for _, s := range sentinels {
		for _, m := range masters {
			info, err := s.SentinelMaster(m)
			if err != nil {
				return err
			}
			slaves, _ := strconv.Atoi(info["num-slaves"])
			if info["flags"] != "master" || slaves < replicas {
				return fmt.Errorf("%s on %s: flags %q, %d replicas", s.Name, m, info["flags"], slaves)
			}
			if others, _ := strconv.Atoi(info["num-other-sentinels"]); others < len(sentinels)-1 {
				return fmt.Errorf("%s on %s: %d of %d other sentinels known", s.Name, m, others, len(sentinels)-1)
			}
		}
	}
	return nil
}

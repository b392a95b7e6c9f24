package scenarios

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

const clusterLayoutSpec = `name: cluster-layout
cluster: {masters: 3, replicas: 1, node_timeout: 500ms}
clients: 3
hosts: 2
duration: 1s
`

// TestClusterLayoutIsTheTopology: the plan's layout names the links the
// cluster topology builds (data and bus links between every two nodes,
// every client host to every node), and each fault's preview is what its
// injection reports; a partition of a pair cuts its bus link with its
// data link.
func TestClusterLayoutIsTheTopology(t *testing.T) {
	cluster.RequireRedisServer(t)
	spec, err := spec.Parse("layout.yaml", []byte(clusterLayoutSpec))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Impl: "set-nx-px", Backend: cluster.RedisServer, Log: slog.New(slog.DiscardHandler)}
	plan, err := Compile(spec, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	topo, err := startTopology(ctx, plan, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	layout := plan.layout()
	if got := linkNames(topo.Net); !reflect.DeepEqual(got, layout.Links) {
		t.Fatalf("the topology built links %v, the plan's layout says %v", got, layout.Links)
	}
	env := &nemesis.Env{Net: topo.Net, Cluster: topo.Cluster, ClientHost: topo.HostOf, Clients: plan.Clients,
		Control: nopControl{}, Rand: rand.New(rand.NewPCG(1, 2)), Replicas: topo.Replicas}
	for _, tc := range []struct {
		f     nemesis.Spec
		links []string // the links the injection must report, when set
	}{
		{nemesis.Spec{Kind: "partition", Hosts: []string{"n2"}, Nodes: []string{"n1"}}, []string{"n2>n1", "n2>n1 bus"}},
		{nemesis.Spec{Kind: "latency", Hosts: []string{"h2"}, Nodes: []string{"r3"}, Latency: time.Millisecond}, []string{"h2>r3"}},
		{nemesis.Spec{Kind: "blackhole", Hosts: []string{"r1"}, Nodes: []string{"n1"}}, []string{"r1>n1", "r1>n1 bus"}},
		{nemesis.Spec{Kind: "server-pause", Nodes: []string{"n3"}}, nil},
	} {
		want, ok := nemesis.Preview(tc.f, layout)
		if !ok {
			t.Fatalf("%s: no preview", flow(tc.f))
		}
		fault, err := nemesis.Build(tc.f)
		if err != nil {
			t.Fatal(err)
		}
		heal, got, err := fault.Inject(ctx, env)
		if err != nil {
			t.Fatalf("%s: %v", flow(tc.f), err)
		}
		if err := heal(); err != nil {
			t.Fatalf("%s: heal: %v", flow(tc.f), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: injected on %s, the preview said %s", flow(tc.f), got, want)
		}
		if tc.links != nil && !reflect.DeepEqual(got.Links, tc.links) {
			t.Errorf("%s: links %v, want %v", flow(tc.f), got.Links, tc.links)
		}
	}
}

// TestClusterSetupFailureLeavesNothing makes each start-up stage of the
// cluster topology fail in turn, and interrupts a run in its traffic: the
// error names the stage (or the interruption), and no redis-server process
// and no listening socket (router, link, server) is left behind.
func TestClusterSetupFailureLeavesNothing(t *testing.T) {
	cluster.RequireRedisServer(t)
	spec, err := spec.Parse("setup.yaml", []byte(clusterLayoutSpec))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Impl: "set-nx-px", Backend: cluster.RedisServer, Log: slog.New(slog.DiscardHandler)}
	before := listeningSockets(t)
	injected := errors.New("injected set-up failure")
	for _, stage := range []string{"backend", "servers", "replicas", "cluster", "subscribe", "interrupt"} {
		t.Run(stage, func(t *testing.T) {
			setupFault = func(s string) error {
				if s == stage {
					return injected
				}
				return nil
			}
			defer func() { setupFault = nil }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			want := injected
			if stage == "interrupt" {
				// What the CLI does on SIGINT: cancel the run's context.
				time.AfterFunc(4*time.Second, cancel)
				want = context.Canceled
				spec.Duration = 30 * time.Second
			}
			_, err := Run(ctx, spec, cfg)
			if !errors.Is(err, want) {
				t.Fatalf("error %v, want %v", err, want)
			}
			if stage != "interrupt" && !strings.Contains(err.Error(), stage+": ") {
				t.Errorf("error %q does not name the stage %s", err, stage)
			}
			if left := redisProcs(); len(left) > 0 {
				t.Errorf("processes left: %v", left)
			}
			if after := listeningSockets(t); after > before {
				t.Errorf("%d listening sockets before, %d after", before, after)
			}
		})
	}
}

// redisProcs lists this process's redis-server children.
func redisProcs() []string {
	me := strconv.Itoa(os.Getpid())
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(s[i+1:])
		if len(fields) > 1 && fields[0] != "Z" && fields[1] == me && strings.Contains(s[:i], "redis") {
			out = append(out, strings.Fields(s)[0])
		}
	}
	return out
}

// listeningSockets counts this process's listening TCP sockets: the
// inodes of its socket descriptors found in LISTEN state (0A) in
// /proc/net/tcp.
func listeningSockets(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("no /proc/net/tcp: %v", err)
	}
	listen := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && f[3] == "0A" {
			listen[f[9]] = true
		}
	}
	fds, _ := filepath.Glob("/proc/self/fd/*")
	n := 0
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok && listen[strings.TrimSuffix(inode, "]")] {
			n++
		}
	}
	return n
}

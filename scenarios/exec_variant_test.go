package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	_ "github.com/lockstorm/lockstorm/lockimpl/exec" // exec variants' client programs
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// needPythonRedis is the runtime of the Python example clients: a skip
// where it is missing, a failure under CI=true (make test installs it).
func needPythonRedis(t *testing.T) {
	t.Helper()
	fail := t.Skipf
	if os.Getenv("CI") == "true" {
		fail = t.Fatalf
	}
	if out, err := osexec.Command("/usr/bin/python3", "-c", "import redis").CombinedOutput(); err != nil {
		fail("/usr/bin/python3 with python3-redis is not installed (make test installs it): %v: %s", err, out)
	}
}

// A spec's exec variant puts a client program on trial like any Go lock:
// impls and expected name the variant, the program's hello gives its
// claims (so a derived expectation too), and the run drives its process.
func TestExecVariantRuns(t *testing.T) {
	needPythonRedis(t)
	cluster.StartForTest(t, 1) // a CI failure without redis-server, a skip elsewhere
	client, err := filepath.Abs("../examples/clients/redis_py_lock.py")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := parseAllowed("exec.yaml", []byte(fmt.Sprintf(`name: exec-variant
clients: 3
keys: 1
duration: 1500ms
lock: {ttl: 2s, retry_delay: 5ms, wait_timeout: 3s}
workload: {cs_min: 0ms, cs_max: 2ms}
impls: [py]
variants:
  py:
    exec: [/usr/bin/python3, %q]
expected:
  # redis-py's Lock: SET NX PX with a uuid token, a Lua compare-and-delete
  # release; no faults and critical sections far below the TTL, so no
  # lease ends while held.
  py: safe
`, client)))
	if err != nil {
		t.Fatal(err)
	}
	info, _, err := spec.Resolve("py")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info.Source, "redis_py_lock.py") {
		t.Errorf("variant py resolves to %q (%s), not the client program", info.Name, info.Source)
	}
	if info.Claims.Topology == "" {
		t.Errorf("the program's hello declared no claims: %+v", info)
	}
	// Each client process has a temporary folder (its clock file): a run
	// removes all it made.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	out, err := Run(context.Background(), spec, Config{Impl: "py", Backend: cluster.RedisServer})
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("the run left %d entries in TMPDIR, e.g. %s", len(left), left[0].Name())
	}
	if out.Impl != "py" || out.Expected != checker.Safe {
		t.Errorf("reported as %q expecting %q; want py expecting safe", out.Impl, out.Expected)
	}
	if out.Result.Verdict != checker.Safe {
		t.Errorf("verdict %s: %s", out.Result.Verdict, out.Result.Reason)
	}
	if out.Processes == nil || out.Processes.Starts < 3 {
		t.Errorf("processes %+v; want one started per client", out.Processes)
	}
	acquired := 0
	for _, op := range out.History {
		if op.F == history.FAcquire && op.Type == history.Ok {
			acquired++
		}
	}
	if acquired < 3 {
		t.Errorf("only %d acquisitions through the client processes", acquired)
	}
}

// parseAllowed parses a spec whose programs the test allows to start.
func parseAllowed(file string, b []byte) (*spec.Spec, error) {
	lim := spec.DefaultLimits()
	lim.AllowExec = true
	return spec.ParseWith(file, b, lim)
}

// A spec is data: without Limits.AllowExec the program an exec variant
// names is not started at load (no hello asked), compiles into a plan that
// names it, and Run refuses it at the variant's exec line; with it, the
// program starts at load.
func TestExecVariantNeedsConsent(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	prog := filepath.Join(dir, "client")
	script := "#!/bin/sh\ntouch '" + marker + "'\nwhile read c r; do case \"$c\" in hello) echo 'hello 1 name=m';; *) echo ok;; esac; done\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	src := []byte(fmt.Sprintf("name: m\nduration: 1s\nclients: 2\nimpls: [v]\nvariants:\n  v:\n    exec: [%s]\n", prog))
	for _, tc := range []struct {
		name    string
		parse   func(string, []byte) (*spec.Spec, error)
		started bool
	}{
		{"default limits", spec.Parse, false},
		{"allowed", parseAllowed, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Remove(marker)
			sp, err := tc.parse("exec.yaml", src)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(marker); (err == nil) != tc.started {
				t.Fatalf("program started at load: %v, want %v", err == nil, tc.started)
			}
			p, err := Compile(sp, Config{Impl: "v"})
			if err != nil {
				t.Fatal(err)
			}
			if p.Program == nil || len(p.Program.Argv) != 1 || p.Program.Argv[0] != prog || p.Program.Unasked == tc.started {
				t.Errorf("plan's program %+v, want [%s] unasked %v", p.Program, prog, !tc.started)
			}
			err = sp.NeedsConsent("v")
			var se *spec.SpecError
			switch {
			case tc.started && err != nil:
				t.Errorf("allowed, yet NeedsConsent = %v", err)
			case !tc.started && (!errors.As(err, &se) || se.Line != 7 || se.Field != "variants.v.exec" || !strings.Contains(se.Msg, "--allow-exec")):
				t.Errorf("NeedsConsent = %v; want exec.yaml:7: variants.v.exec: ... --allow-exec", err)
			}
			if tc.started {
				return
			}
			if _, err := Run(context.Background(), sp, Config{Impl: "v", Backend: cluster.Embedded}); !errors.As(err, &se) {
				t.Errorf("Run = %v; want the consent error", err)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("Run started the program")
			}
		})
	}
}

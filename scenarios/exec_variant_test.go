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
	"github.com/lockstorm/lockstorm/internal/cluster"
	_ "github.com/lockstorm/lockstorm/lockimpl/exec" // exec variants' client programs
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
	spec, err := Parse("exec.yaml", []byte(fmt.Sprintf(`name: exec-variant
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
		if op.F == checker.FAcquire && op.Type == checker.Ok {
			acquired++
		}
	}
	if acquired < 3 {
		t.Errorf("only %d acquisitions through the client processes", acquired)
	}
}

// A program that runs but does not speak the protocol is refused at load,
// at the variant's exec line.
func TestExecVariantNoHello(t *testing.T) {
	_, err := Parse("exec.yaml", []byte(`name: m
duration: 1s
clients: 2
impls: [v]
variants:
  v:
    exec: [/bin/true]
`))
	var se *SpecError
	if !errors.As(err, &se) || se.Line != 7 || se.Field != "variants.v.exec" || !strings.Contains(se.Msg, "hello") {
		t.Fatalf("err = %v; want exec.yaml:7: variants.v.exec: ... no hello reply", err)
	}
}

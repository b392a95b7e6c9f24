package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// pythonRelease is getset run as getset-py: seed 003's release (delete only
// before its own timeout) on the Java acquire.
func pythonRelease(t *testing.T) *lockimpl.Info {
	info, err := lockimpl.Lookup("getset")
	if err != nil {
		t.Fatal(err)
	}
	newGetset, claimsFor := info.New, info.ClaimsFor
	info.Name = "getset-py"
	info.New = func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
		o.ReleaseVariant = "python"
		return newGetset(env, o)
	}
	info.ClaimsFor = func(o lockimpl.Options) lockimpl.Claims {
		o.ReleaseVariant = "python"
		return claimsFor(o)
	}
	info.Claims = info.ClaimsFor(lockimpl.Options{})
	return &info
}

// matrixClient is one shipped client program of the client matrix: a
// document's own code beside lockstorm's Go port of it (port set), or a
// library with no port, run for its verdicts alone.
type matrixClient struct {
	client []string
	// probe is the runtime check (needRuntime's program and arguments).
	probe []string
	// install, when set, is the program's own set-up (its packages, its
	// compilation), run before the probe: the test prepares what it needs
	// instead of depending on a make step having run first. installer is
	// the tool install needs (npm, javac).
	install   []string
	installer string
	port      func(t *testing.T) *lockimpl.Info
	// claimed says the original's verdict in every scheduled scenario must
	// be the one its hello's claims derive (the scenario's rules): the
	// client is tested against what its document claims, not only against
	// its port.
	claimed bool
	// specs are the scenarios run by default: few, as a whole-second
	// client runs each stretched to seconds-long TTLs (LOCKSTORM_CLIENT_MATRIX=1:
	// every shipped scenario a client process can run).
	specs []string
	// known are differences from the port with their explanation, scenario →
	// note. A difference not listed fails the test, and so does a listed one
	// that went away (the note would be stale).
	known map[string]string
	// inconclusive are cells that may prove nothing for a reason of the
	// lock's own algorithm, scenario → note (may: the run is a race the
	// algorithm can lose on a loaded machine); any other inconclusive cell
	// fails the test (a whole-second lock runs stretched to its timescale,
	// so its clock is never the reason).
	inconclusive map[string]string
}

// Seed 000's unlock script deletes only an expired key (documented case 8)
// and its EXPIRE is the TTL + 1 s, so after every release the lock stays
// taken for a whole lock life (4 s at the scaled 3 s TTL) and then goes to
// whichever waiter polls first: few holds per run, in no chosen order. The
// Go port lua-getset does the same.
const (
	php000Handoff = "seed 000's unlock frees only an expired lock: each hand-off waits out a 4 s lock life and " +
		"goes to whichever waiter polls first, so the client the schedule needs next may not hold within the run"
	php000Crash = "the random crash at cs/hold (prob 0.02 per hold) needs many holds; seed 000's unlock frees only " +
		"an expired lock, so the run has one hold per 4 s lock life (about 20) and the crash may never fire"
)

func matrixClients() []matrixClient {
	php := []string{"php", "-r", `exit(class_exists("Redis") ? 0 : 1);`}
	py := []string{"/usr/bin/python3", "-c", "import redis"}
	return []matrixClient{{
		client: []string{"php", example("seed000_lua_getset.php")},
		probe:  php,
		port:   func(t *testing.T) *lockimpl.Info { i, _ := lockimpl.Lookup("lua-getset"); return &i },
		specs:  []string{"pause-past-ttl"},
		inconclusive: map[string]string{
			"del-race":                   php000Handoff,
			"foreign-unlock":             php000Handoff,
			"crash-before-expire-random": php000Crash,
			"del-race-random":            php000Crash,
			"getset-overwrite-random":    php000Crash,
		},
	}, {
		client: []string{"/usr/bin/python3", example("seed003_getset.py")},
		probe:  py,
		port:   pythonRelease,
		specs:  []string{"getset-overwrite"},
	}, {
		client: []string{"/usr/bin/python3", example("redis_py_lock.py")},
		probe:  py,
		specs:  []string{"pause-past-ttl"},
	}, {
		client:    []string{"node", example("node-redlock/redlock.js")},
		install:   []string{"sh", example("node-redlock/install.sh")},
		installer: "npm",
		probe:     []string{"node", "-e", "require(process.argv[1])", example("node-redlock/node_modules/redlock")},
		specs:     []string{"pause-past-ttl"},
	}, {
		// Seed 001's Java RedisLock, compiled by its build.sh: the two
		// scenarios its claims derive unsafe (a clock behind, a late
		// unconditional DEL) and the one they derive safe (one GETSET
		// winner), a few seconds each; `make seed001` runs every scenario.
		client:    javaSeed001(),
		install:   []string{"sh", example("java/build.sh")},
		installer: "javac",
		probe:     []string{"java", "-version"},
		port:      func(t *testing.T) *lockimpl.Info { i, _ := lockimpl.Lookup("getset"); return &i },
		specs:     []string{"getset-overwrite", "foreign-unlock", "del-race"},
		claimed:   true,
	}}
}

// javaSeed001 is the command line of seed 001's Java client: the classes
// build.sh compiles into build/java, on a JVM that starts fast (a client
// process is started per client and again after every crash).
func javaSeed001() []string {
	classes, _ := filepath.Abs(filepath.Join("..", "..", "build", "java"))
	return []string{"java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", classes, "Seed001RedisLock"}
}

// matrixCell is one scenario × client, with its port's run when it has one.
type matrixCell struct {
	spec         string
	mc           *matrixClient
	client, port string
	orig, ported *scenarios.Outcome
	origJ, portJ int // the jobs' indexes (portJ -1: no port)
}

// TestClientMatrix runs the shipped client programs (seed 000's PHP, seed
// 003's Python, redis-py's Lock, node-redlock, seed 001's Java) on the shipped scenarios,
// and the documents' own locks beside their Go ports on the same seeds:
// no cell may be inconclusive unless its note explains it by the lock's
// algorithm, and an original's verdict class must agree with its port's,
// or the difference must be one the note explains (an unfaithful port, or
// a real effect of the runtime). Whole-second locks run every scenario
// stretched to their timescale (spec.FitTimeScale). By default a few
// scenarios per client; LOCKSTORM_CLIENT_MATRIX=1 runs every one.
func TestClientMatrix(t *testing.T) {
	all := os.Getenv("LOCKSTORM_CLIENT_MATRIX") == "1"
	ctx := context.Background()
	var jobs []scenarios.Job
	var cells []matrixCell
	clients := matrixClients()
	for k := range clients {
		mc := &clients[k]
		if mc.install != nil {
			needRuntime(t, mc.installer)
			needRuntime(t, mc.install[0], mc.install[1:]...)
		}
		needRuntime(t, mc.probe[0], mc.probe[1:]...)
		info, err := Register(ctx, mc.client)
		if err != nil {
			t.Fatal(err)
		}
		var port *lockimpl.Info
		if mc.port != nil {
			port = mc.port(t)
		}
		names := mc.specs
		if all {
			names = spec.Names()
		}
		for _, n := range names {
			spec, err := spec.Load(n)
			if err != nil {
				t.Fatal(err)
			}
			// A client process is given node addresses, never Sentinels
			// (the protocol has no discovery; the CLI skips these too).
			if spec.Sentinel != nil {
				continue
			}
			c := matrixCell{spec: n, mc: mc, client: info.Name, origJ: len(jobs), portJ: -1}
			jobs = append(jobs, scenarios.Job{Spec: spec, Config: scenarios.Config{Impl: info.Name, Backend: "redis-server"}})
			if port != nil {
				c.port, c.portJ = port.Name, len(jobs)
				jobs = append(jobs, scenarios.Job{Spec: spec, Config: scenarios.Config{Impl: port.Name, Info: port, Backend: "redis-server"}})
			}
			cells = append(cells, c)
		}
	}
	outs, errs := scenarios.RunMany(ctx, jobs, 2, nil, nil)
	var table strings.Builder
	fmt.Fprintf(&table, "%-28s %-16s %-14s %-10s %-14s %s\n", "scenario", "client", "verdict", "expected", "port", "verdict")
	for i := range cells {
		c := &cells[i]
		c.orig = outs[c.origJ]
		if c.portJ >= 0 {
			c.ported = outs[c.portJ]
		}
		if err := errors.Join(errs[c.origJ], portErr(errs, c.portJ)); err != nil {
			// One cell's set-up error does not hide the others' verdicts.
			t.Errorf("%s × %s: %v", c.spec, c.client, err)
			continue
		}
		fmt.Fprintf(&table, "%s\n", c.line())
		c.judge(t)
	}
	t.Logf("client matrix (original vs Go port, same seeds):\n%s", table.String())
}

// line is the cell in the matrix's log.
func (c *matrixCell) line() string {
	v := c.orig.Result.Verdict
	if c.orig.TimeScale.Scaled() {
		v += fmt.Sprintf(" ×%g", c.orig.TimeScale.Factor)
	}
	port, pv := "—", ""
	if c.ported != nil {
		port, pv = c.port, c.ported.Result.Verdict
	}
	return fmt.Sprintf("%-28s %-16s %-14s %-10s %-14s %s", c.spec, c.client, v, c.orig.Expected, port, pv)
}

// judge fails the test on an unexplained inconclusive cell, or on an
// unexplained difference from the port in a scheduled scenario (which
// forces one interleaving) and on a note for one that went away. A random
// mode finds its failure on some seeds, not all (README): its differences
// are logged, not failed.
func (c *matrixCell) judge(t *testing.T) {
	t.Helper()
	o := c.orig
	if _, ok := c.mc.inconclusive[c.spec]; !ok && o.Result.Verdict == checker.Inconclusive {
		t.Errorf("%s × %s: inconclusive (%s)%s: explain it by the lock's algorithm in the client's notes, or fix the cause",
			c.spec, c.client, o.Result.Reason, scaledWords(o))
	}
	if c.ported == nil {
		return
	}
	orig, ported := o.Result.Verdict, c.ported.Result.Verdict
	if _, may := c.mc.inconclusive[c.spec]; may && (orig == checker.Inconclusive || ported == checker.Inconclusive) {
		return // the note says either run may prove nothing: nothing to compare
	}
	if c.mc.claimed && o.Mode != "random" && !o.AsExpected() {
		t.Errorf("%s × %s: %s, but its claims derive %s (%s)", c.spec, c.client, o.Result.Verdict, o.Expected, o.ExpectedReason)
	}
	note, known := c.mc.known[c.spec]
	report := t.Errorf
	if o.Mode == "random" {
		report = t.Logf
	}
	switch {
	case orig != ported && !known:
		report("%s: the original %s is %s%s, the port %s is %s (explain it in the client's known notes, or fix the port)",
			c.spec, c.client, orig, scaledWords(o), c.port, ported)
	case orig == ported && known:
		report("%s: %s and %s now agree (%s); the note %q is stale", c.spec, c.client, c.port, orig, note)
	}
}

func portErr(errs []error, j int) error {
	if j < 0 {
		return nil
	}
	return errs[j]
}

func scaledWords(o *scenarios.Outcome) string {
	if !o.TimeScale.Scaled() {
		return ""
	}
	return " (" + o.TimeScale.Brief() + ")"
}

package lockimpl_test

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/lockstorm/lockstorm/lockimpl"
)

var (
	seenMu     sync.Mutex
	seenPoints = map[string]bool{}
)

// TestMain runs the package's tests, whose rigs record every failpoint
// hit on real redis-servers, then checks the points each implementation
// declares (Info.Points, what specs are validated against) against the
// points actually hit: a hit point that is not declared would be refused
// in a spec although it exists; a declared point never hit (when the whole
// package ran) is a name a spec could use that never fires.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		code = checkPoints(flag.Lookup("test.run").Value.String() == "" && flag.Lookup("test.skip").Value.String() == "")
	}
	os.Exit(code)
}

func checkPoints(complete bool) int {
	declared := map[string]string{}
	for _, info := range lockimpl.All() {
		for _, p := range info.Points {
			if !strings.HasPrefix(p, info.Name+"/") {
				fmt.Printf("FAIL: %s declares point %s outside its own name\n", info.Name, p)
				return 1
			}
			declared[p] = info.Name
		}
	}
	var undeclared, unhit []string
	seenMu.Lock()
	defer seenMu.Unlock()
	for p := range seenPoints {
		if _, ok := declared[p]; !ok {
			undeclared = append(undeclared, p)
		}
	}
	if complete {
		for p := range declared {
			if !seenPoints[p] {
				unhit = append(unhit, p)
			}
		}
	}
	sort.Strings(undeclared)
	sort.Strings(unhit)
	if len(undeclared) > 0 || len(unhit) > 0 {
		fmt.Printf("FAIL: failpoints hit but not declared in Info.Points: %v; declared but never hit by the tests: %v\n", undeclared, unhit)
		return 1
	}
	if complete {
		fmt.Printf("failpoints: all %d declared points hit, none undeclared\n", len(declared))
	}
	return 0
}

// TestOptionChecks: implementation option hooks refuse what cannot run,
// with the option's name, before any server starts.
func TestOptionChecks(t *testing.T) {
	for _, tc := range []struct {
		impl   string
		o      lockimpl.Options
		nodes  int
		option string
	}{
		{"getset", lockimpl.Options{ReleaseVariant: "pyhton"}, 1, "release"},
		{"redlock", lockimpl.Options{Nodes: 7}, 1, "nodes"},
		{"set-nx-px", lockimpl.Options{TTL: 1}, 1, "ttl"},
		{"set-nx-px", lockimpl.Options{TTL: 2 * 1e6, Watchdog: true}, 1, "ttl"},
		{"fenced", lockimpl.Options{RetryCount: -1}, 1, "retry_count"},
	} {
		info, err := lockimpl.Lookup(tc.impl)
		if err != nil {
			t.Fatal(err)
		}
		err = info.CheckOptions(tc.o, tc.nodes)
		oe, ok := err.(*lockimpl.OptionError)
		if !ok || oe.Option != tc.option {
			t.Errorf("%s %+v: err = %v, want an OptionError on %s", tc.impl, tc.o, err, tc.option)
		}
	}
	for _, tc := range []struct {
		impl  string
		o     lockimpl.Options
		nodes int
	}{
		{"getset", lockimpl.Options{ReleaseVariant: "python"}, 1},
		{"redlock", lockimpl.Options{Nodes: 5}, 5},
		{"redlock", lockimpl.Options{}, 3},
		{"set-nx-px", lockimpl.Options{TTL: 1e6}, 1},
	} {
		info, _ := lockimpl.Lookup(tc.impl)
		if err := info.CheckOptions(tc.o, tc.nodes); err != nil {
			t.Errorf("%s %+v: %v", tc.impl, tc.o, err)
		}
	}
}

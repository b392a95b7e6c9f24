// Package sim runs a function in a bubble of virtual time
// (testing/synctest): inside it time.Now, timers, sleeps and contexts'
// deadlines follow a clock that jumps forward whenever every goroutine of
// the bubble is blocked on something only the bubble can wake (a channel,
// a timer, an in-memory pipe). A run whose servers, links and clients all
// live in-process (the sim backend) then costs the CPU it uses, not the
// seconds it simulates, and no load on the machine can stretch a timeout.
//
// synctest's only entry point is synctest.Test, which needs a *testing.T.
// Outside a test binary sim starts one host test through
// testing.MainStart, once per process, and runs every bubble as a subtest
// of it; bubbles run concurrently. Inside a test binary the same host is
// started beside the binary's own tests (its subtests are named sim/...).
package sim

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Do runs fn in a new bubble and returns once fn and every goroutine it
// started have ended. A panic inside the bubble, or goroutines of it left
// blocked forever once fn returns, are returned as an error (the run's
// harness leaked them: a bug).
func Do(fn func()) (err error) {
	hostOnce.Do(startHost)
	done := make(chan error, 1)
	jobs <- func(t *testing.T) {
		var err error
		// Sent whatever ends the subtest: a return, a panic (recovered
		// here, or the whole program would die with the bubble), or
		// synctest failing the subtest through runtime.Goexit.
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("%w: %v", ErrBubble, p)
				if os.Getenv("LOCKSTORM_SIM_DEBUG") != "" {
					buf := make([]byte, 1<<22)
					os.Stderr.Write(buf[:runtime.Stack(buf, true)])
				}
			} else if err == nil && t.Failed() {
				err = fmt.Errorf("%w: the bubble failed", ErrBubble)
			}
			done <- err
		}()
		synctest.Test(t, func(*testing.T) { fn() })
	}
	return <-done
}

// ErrBubble is wrapped by the errors of a bubble that did not end cleanly.
var ErrBubble = errors.New("sim")

var (
	hostOnce sync.Once
	jobs     = make(chan func(*testing.T))
)

// startHost starts the host test that runs every bubble as a subtest.
func startHost() {
	// A run in a bubble allocates as fast as it computes, and collecting
	// took a tenth of its CPU at the default: a heap up to five times the
	// live one (a sim run's is tens of MB) buys that back. GOGC, when set,
	// is the user's.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if !testing.Testing() {
		testing.Init()
		// The host's flags are testing's defaults; the program's own
		// flags are its business, never parsed here.
		_ = flag.CommandLine.Parse(nil)
	}
	m := testing.MainStart(deps{}, []testing.InternalTest{{Name: "sim", F: host}}, nil, nil, nil)
	go m.Run()
}

// host runs each job in a subtest of its own, concurrently; it never ends.
func host(t *testing.T) {
	for j := range jobs {
		go t.Run("bubble", j)
	}
}

// corpusEntry is testing's fuzz corpus entry (an alias of this struct).
type corpusEntry = struct {
	Parent     string
	Path       string
	Data       []byte
	Values     []any
	Generation int
	IsSeed     bool
}

// deps is what testing.MainStart needs of a test binary's generated main:
// nothing here profiles, logs or fuzzes.
type deps struct{}

func (deps) ImportPath() string                          { return "" }
func (deps) ModulePath() string                          { return "" }
func (deps) MatchString(string, string) (bool, error)    { return true, nil }
func (deps) SetPanicOnExit0(bool)                        {}
func (deps) StartCPUProfile(io.Writer) error             { return nil }
func (deps) StopCPUProfile()                             {}
func (deps) StartTestLog(io.Writer)                      {}
func (deps) StopTestLog() error                          { return nil }
func (deps) WriteProfileTo(string, io.Writer, int) error { return nil }
func (deps) CoordinateFuzzing(time.Duration, int64, time.Duration, int64, int, []corpusEntry, []reflect.Type, string, string) error {
	return nil
}
func (deps) RunFuzzWorker(func(corpusEntry) error) error              { return nil }
func (deps) ReadCorpus(string, []reflect.Type) ([]corpusEntry, error) { return nil, nil }
func (deps) CheckCorpus([]any, []reflect.Type) error                  { return nil }
func (deps) ResetCoverage()                                           {}
func (deps) SnapshotCoverage()                                        {}
func (deps) InitRuntimeCoverage() (string, func(string, string) (string, error), func() float64) {
	return "", nil, nil
}

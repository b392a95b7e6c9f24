package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestMalformedSpecsStartNothing runs `lockstorm run` on every spec of
// scenarios/spec/testdata/malformed. Each spec is valid but for one mistake and
// says on its first line what the refusal must read (# want: LINE: FIELD:
// MESSAGE, after the file name). The run must exit 2 with that message and
// start nothing: while it runs, a watcher samples this process's child
// processes, its listening sockets and the temp dirs the cluster package
// creates, and neither --out nor --junit may appear.
func TestMalformedSpecsStartNothing(t *testing.T) {
	files, err := filepath.Glob("../../scenarios/spec/testdata/malformed/*.yaml")
	if err != nil || len(files) < 50 {
		t.Fatalf("want at least 50 malformed specs, found %d (%v)", len(files), err)
	}
	base := observe()
	tried, refused, withField, started := 0, 0, 0, 0
	fieldRe := regexp.MustCompile(`^\d+: [a-z_]+[a-z0-9_.-]*: `)
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		t.Run(name, func(t *testing.T) {
			tried++
			want := wantLine(t, file)
			dir := t.TempDir()
			out, junit := filepath.Join(dir, "out"), filepath.Join(dir, "junit.xml")
			w := watch(base)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err := run(ctx, []string{"run", "--scenario", file, "--out", out, "--junit", junit, "--keep", "all"})
			cancel()
			seen := w.stop()
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 {
				t.Errorf("err = %v; want exit 2", err)
			} else {
				refused++
			}
			prefix := file + ":"
			if !strings.HasPrefix(want, "0") && (want[0] < '0' || want[0] > '9') {
				prefix = file + ": "
			}
			if err == nil || !strings.Contains(err.Error(), prefix+want) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, prefix+want)
			} else if fieldRe.MatchString(want) {
				withField++
			}
			for _, p := range []string{out, junit} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was created", p)
				}
			}
			if seen != "" {
				started++
				t.Errorf("started something: %s", seen)
			}
		})
	}
	t.Logf("malformed specs: %d tried, %d refused with exit 2, %d with file:line: field: message, %d started anything", tried, refused, withField, started)
}

// wantLine reads the "# want: " comment on the spec's first line.
func wantLine(t *testing.T, file string) string {
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	want, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "# want: ")
	if !ok {
		t.Fatalf("%s: first line is not a # want: comment", file)
	}
	return want
}

// state is what a run could have started: child processes, listening
// sockets of this process, lockstorm temp dirs.
type state struct {
	children, listeners int
	temps               map[string]bool
}

func observe() state {
	s := state{temps: map[string]bool{}}
	pid := strconv.Itoa(os.Getpid())
	// Every thread's children (CONFIG_PROC_CHILDREN): the processes this
	// one started, whichever goroutine's thread started them.
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, p := range tasks {
		b, _ := os.ReadFile(p)
		s.children += len(strings.Fields(string(b)))
	}
	// Listening sockets among this process's descriptors (SO_ACCEPTCONN),
	// without reading the machine-wide socket tables.
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, e := range fds {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || !strings.HasPrefix(l, "socket:") {
			continue
		}
		if v, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err == nil && v == 1 {
			s.listeners++
		}
	}
	// The cluster package names its temp dirs after the process, so other
	// processes on the machine do not count.
	m, _ := filepath.Glob(filepath.Join(os.TempDir(), "lockstorm-redis-"+pid+"-*"))
	for _, d := range m {
		s.temps[d] = true
	}
	return s
}

// watcher samples the state until stopped and reports anything beyond the
// baseline.
type watcher struct {
	base  state
	stopc chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	seen  []string
}

func watch(base state) *watcher {
	w := &watcher{base: base, stopc: make(chan struct{}), done: make(chan struct{})}
	w.sample()
	go func() {
		defer close(w.done)
		for {
			select {
			case <-w.stopc:
				return
			case <-time.After(5 * time.Millisecond):
				w.sample()
			}
		}
	}()
	return w
}

func (w *watcher) sample() {
	s := observe()
	w.mu.Lock()
	defer w.mu.Unlock()
	if s.children > w.base.children {
		w.seen = append(w.seen, strconv.Itoa(s.children-w.base.children)+" child process(es)")
	}
	if s.listeners > w.base.listeners {
		w.seen = append(w.seen, strconv.Itoa(s.listeners-w.base.listeners)+" listening socket(s)")
	}
	for d := range s.temps {
		if !w.base.temps[d] {
			w.seen = append(w.seen, "temp dir "+d)
		}
	}
}

func (w *watcher) stop() string {
	close(w.stopc)
	<-w.done
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	dup := map[string]bool{}
	for _, x := range w.seen {
		if !dup[x] {
			dup[x] = true
			out = append(out, x)
		}
	}
	return strings.Join(out, ", ")
}

package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// buildBinary compiles lockstorm once per test binary.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "lockstorm")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// redisChildren lists the redis-server processes whose parent is pid.
func redisChildren(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		rp := strings.LastIndexByte(s, ')')
		if rp < 0 || !strings.Contains(s[:rp], "redis-server") {
			continue
		}
		fields := strings.Fields(s[rp+1:])
		if len(fields) > 1 {
			if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
				out = append(out, child)
			}
		}
	}
	return out
}

func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// A zombie is dead for our purpose: it holds no port and no memory.
	s := string(b)
	rp := strings.LastIndexByte(s, ')')
	return rp < 0 || !strings.HasPrefix(strings.TrimSpace(s[rp+1:]), "Z")
}

// TestNoOrphans interrupts (SIGINT) and kills (SIGKILL) a running harness
// and checks that no redis-server it spawned survives.
func TestNoOrphans(t *testing.T) {
	cluster.StartForTest(t, 1) // fails under CI=true without redis-server, skips elsewhere
	bin := buildBinary(t)
	for _, tc := range []struct {
		name     string
		sig      syscall.Signal
		wantCode int
		scenario string
		// kids is how many redis-server children to wait for before the
		// signal: the Sentinel topology has master, replica and 3 Sentinels.
		kids int
	}{
		{"sigint", syscall.SIGINT, 130, "contention", 1},
		{"sigkill", syscall.SIGKILL, -1, "contention", 1},
		{"sentinel-sigkill", syscall.SIGKILL, -1, "sentinel-kill", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(bin, "run", "--scenario", tc.scenario, "--impl", "set-nx-px", "--backend", "redis-server")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var kids []int
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if kids = redisChildren(cmd.Process.Pid); len(kids) >= tc.kids {
					break
				}
			}
			if len(kids) < tc.kids {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("%d redis-server children appeared, want %d", len(kids), tc.kids)
			}
			time.Sleep(500 * time.Millisecond) // let the run get going
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			code := cmd.ProcessState.ExitCode()
			if code != tc.wantCode {
				t.Errorf("exit code %d (%v), want %d", code, err, tc.wantCode)
			}
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				left := 0
				for _, k := range kids {
					if alive(k) {
						left++
					}
				}
				if left == 0 {
					return
				}
			}
			for _, k := range kids {
				if alive(k) {
					syscall.Kill(k, syscall.SIGKILL)
					t.Errorf("redis-server pid %d outlived the harness (%s)", k, tc.name)
				}
			}
		})
	}
}

// childrenRunning lists the processes whose parent is pid and whose command
// line contains what.
func childrenRunning(pid int, what string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), what) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			if ppid, _ := strconv.Atoi(fields[1]); ppid == pid {
				out = append(out, child)
			}
		}
	}
	return out
}

// TestNoOrphanClients SIGKILLs a harness running external client processes
// (lockstorm run --exec): lockstorm gets no chance to clean up, and the
// clients ignore the end of their stdin, yet none outlives it
// (PR_SET_PDEATHSIG from a thread that lives as long as the harness).
func TestNoOrphanClients(t *testing.T) {
	cluster.StartForTest(t, 1)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is needed for the client process: %v", err)
	}
	bin := buildBinary(t)
	script, _ := filepath.Abs("testdata/stubborn_client.py")
	cmd := exec.Command(bin, "run", "--scenario", "contention", "--exec", py+" "+script, "--backend", "redis-server", "--keep", "none")
	// A SIGKILLed harness cannot remove its clients' temporary folders:
	// they go to the test's own, which the test removes.
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var kids []int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		// contention runs 16 clients.
		if kids = childrenRunning(cmd.Process.Pid, "stubborn_client.py"); len(kids) >= 16 {
			break
		}
	}
	if len(kids) < 16 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("%d client processes appeared, want 16", len(kids))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left := 0
		for _, k := range kids {
			if alive(k) {
				left++
			}
		}
		if left == 0 {
			return
		}
	}
	for _, k := range kids {
		if alive(k) {
			syscall.Kill(k, syscall.SIGKILL)
			t.Errorf("client process %d outlived a SIGKILLed harness", k)
		}
	}
}

// interruptSpec is a short suite job: four seeds of it, one at a time, take
// about 6 s, and each run has its own redis-server.
const interruptSpec = `name: interrupt-me
clients: 2
keys: 1
duration: 1500ms
lock: {ttl: 2s, retry_delay: 5ms, wait_timeout: 3s}
workload: {cs_min: 0ms, cs_max: 2ms}
impls: [set-nx-px]
expected:
  # No faults, critical sections far below the TTL.
  set-nx-px: safe
`

// harness is the lockstorm binary running a suite, with its stderr lines
// and every child process it was seen to have.
type harness struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	lines  chan string
	mu     sync.Mutex
	kids   map[int]bool
	done   chan struct{}
}

func startHarness(t *testing.T, bin string, args ...string) *harness {
	t.Helper()
	h := &harness{cmd: exec.Command(bin, args...), lines: make(chan string, 1000), kids: map[int]bool{}, done: make(chan struct{})}
	h.cmd.Stdout = &h.stdout
	stderr, err := h.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			h.lines <- sc.Text()
		}
		close(h.lines)
	}()
	go func() {
		// Children are sampled until the harness exits: servers of runs
		// long finished included.
		for {
			for _, k := range childrenRunning(h.cmd.Process.Pid, "") {
				h.mu.Lock()
				h.kids[k] = true
				h.mu.Unlock()
			}
			select {
			case <-h.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return h
}

// waitLine waits for a stderr line containing s.
func (h *harness) waitLine(t *testing.T, s string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				t.Fatalf("stderr ended before a line with %q", s)
			}
			if strings.Contains(l, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no stderr line with %q within %v", s, d)
		}
	}
}

func (h *harness) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := h.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the harness to exit, then for every child it had to be
// gone (servers are killed as their runs end; Pdeathsig ends them with a
// harness killed by a signal).
func (h *harness) wait(t *testing.T) *os.ProcessState {
	t.Helper()
	go func() {
		for range h.lines { // drain, so the harness never blocks on stderr
		}
	}()
	h.cmd.Wait()
	close(h.done)
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.kids) == 0 {
		t.Errorf("no child process was seen: the test watched nothing")
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		left := 0
		for k := range h.kids {
			if alive(k) {
				left++
			}
		}
		if left == 0 {
			return h.cmd.ProcessState
		}
	}
	for k := range h.kids {
		if alive(k) {
			syscall.Kill(k, syscall.SIGKILL)
			t.Errorf("child process %d outlived the harness", k)
		}
	}
	return h.cmd.ProcessState
}

// TestInterruptReports: SIGINT or SIGTERM during a suite reports what
// finished (table, summary, the line saying so, the suite page, the kept
// folders) and exits 130; a second signal ends lockstorm at once. No
// process is left either way.
func TestInterruptReports(t *testing.T) {
	cluster.StartForTest(t, 1) // fails under CI=true without redis-server, skips elsewhere
	bin := buildBinary(t)
	spec := filepath.Join(t.TempDir(), "interrupt.yaml")
	if err := os.WriteFile(spec, []byte(interruptSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			out := t.TempDir()
			h := startHarness(t, bin, "run", "--scenario", spec, "--seeds", "4", "--parallel", "1", "--keep", "all",
				"--out", out, "--backend", "redis-server")
			// Non-terminal progress prints a line as each run ends.
			h.waitLine(t, "[1/4] interrupt-me × set-nx-px:", 60*time.Second)
			h.signal(t, sig)
			st := h.wait(t)
			printed := h.stdout.String()
			if st.ExitCode() != 130 {
				t.Errorf("exit code %d, want 130\n%s", st.ExitCode(), printed)
			}
			m := regexp.MustCompile(`interrupted after (\d+) of 4 runs`).FindStringSubmatch(printed)
			if m == nil {
				t.Fatalf("no 'interrupted after N of 4 runs' line:\n%s", printed)
			}
			n, _ := strconv.Atoi(m[1])
			if n < 1 || n > 3 {
				t.Errorf("interrupted after %d of 4 runs; want 1 to 3 (one had finished, one was running)", n)
			}
			for _, s := range []string{"interrupt-me (random)", fmt.Sprintf("summary: %d runs", n), "suite page: "} {
				if !strings.Contains(printed, s) {
					t.Errorf("output lacks %q:\n%s", s, printed)
				}
			}
			var folders int
			ents, _ := os.ReadDir(out)
			for _, e := range ents {
				if _, err := os.Stat(filepath.Join(out, e.Name(), "history.jsonl")); err == nil {
					folders++
				}
			}
			if folders != n {
				t.Errorf("%d run folders kept, want %d (every finished run, --keep all)", folders, n)
			}
			page, err := os.ReadFile(filepath.Join(out, "index.html"))
			if err != nil || !strings.Contains(string(page), m[0]) {
				t.Errorf("suite page (%v) does not say %q", err, m[0])
			}
		})
	}
	t.Run("second signal", func(t *testing.T) {
		// The second signal must land while lockstorm is still busy: a
		// try in which it finished its report first proves nothing and is
		// made again.
		for try := 1; try <= 3; try++ {
			h := startHarness(t, bin, "run", "--scenario", spec, "--seeds", "4", "--parallel", "1", "--keep", "all",
				"--out", t.TempDir(), "--backend", "redis-server")
			h.waitLine(t, "[1/4] interrupt-me × set-nx-px:", 60*time.Second)
			h.signal(t, syscall.SIGINT)
			h.waitLine(t, "interrupt again to stop at once", 10*time.Second)
			// Stopped, lockstorm cannot finish its report before the
			// second signal lands: it is delivered as it resumes.
			if err := h.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Logf("try %d: lockstorm finished before the second signal (%v)", try, err)
				h.wait(t)
				continue
			}
			h.signal(t, syscall.SIGINT)
			resumed := time.Now()
			h.signal(t, syscall.SIGCONT)
			st := h.wait(t)
			ws := st.Sys().(syscall.WaitStatus)
			if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
				t.Errorf("ended %v, want killed by the second SIGINT", st)
			}
			if d := time.Since(resumed); d > 5*time.Second {
				t.Errorf("took %v to stop after the second signal", d)
			}
			return
		}
		t.Fatal("lockstorm finished its report before the second signal in every try")
	})
}

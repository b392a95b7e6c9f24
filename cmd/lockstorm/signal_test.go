package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

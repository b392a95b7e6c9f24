package scenarios

import (
	"math"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestLoadGate: a job starts when nothing runs, whatever the load; else
// only below the cap, admitEvery after the previous start, and while the
// suite used less than its budget of the CPUs.
func TestLoadGate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const budget = 0.5
	for _, tc := range []struct {
		name    string
		running int
		busy    float64
		since   time.Duration // since the last admission
		want    bool
	}{
		{"room", 2, 0.1, time.Second, true},
		{"nothing runs, suite over budget", 0, 2, 0, true},
		{"over budget", 2, budget, time.Second, false},
		{"just under budget", 2, budget - 0.01, time.Second, true},
		{"too soon after the last start", 2, 0.1, admitEvery - time.Millisecond, false},
		{"at the cap", 8, 0, time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			g := &loadGate{busy: func() float64 { return tc.busy }, stop: func() {}, max: 8, budget: budget,
				now: func() time.Time { return now }, last: t0.Add(-tc.since)}
			if got := g.admit(tc.running); got != tc.want {
				t.Fatalf("admit(%d) at %.2f CPUs, %v after the last start = %v, want %v", tc.running, tc.busy, tc.since, got, tc.want)
			}
			if tc.want && !g.last.Equal(now) {
				t.Fatal("an admission did not restart the spacing")
			}
			if !tc.want && !g.last.Equal(t0.Add(-tc.since)) {
				t.Fatal("a refusal moved the last admission")
			}
		})
	}
}

// TestOwnCPU: the suite's CPU counts a busy child process while it runs,
// and no more than the time that passed per CPU.
func TestOwnCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skipf("no /proc on %s (RunMany falls back to a fixed parallelism)", runtime.GOOS)
	}
	m, err := newCPUMeter(time.Second, readOwnCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if b := m.busy(); !math.IsInf(b, 1) {
		t.Fatalf("busy before a second sample = %v, want no room", b)
	}
	// A child that spins on a CPU: the meter must see about one CPU.
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(busyWindow + 3*meterTick)
	if b := m.busy(); b < 0.3 || b > float64(runtime.NumCPU())+0.2 {
		t.Fatalf("busy with a spinning child = %.2f CPUs, want about 1 (at least 0.3 on a loaded machine)", b)
	}
}

package scenarios

import (
	"runtime"
	"testing"
	"time"
)

// TestLoadGate: a job starts when nothing runs, whatever the load; else
// only below the cap, admitEvery after the previous start, and while the
// CPUs were less than maxBusy busy.
func TestLoadGate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tc := range []struct {
		name    string
		running int
		busy    float64
		since   time.Duration // since the last admission
		want    bool
	}{
		{"idle machine, room", 2, 0.1, time.Second, true},
		{"nothing runs, machine saturated", 0, 1, 0, true},
		{"busy machine", 2, maxBusy, time.Second, false},
		{"just below the busy bound", 2, maxBusy - 0.01, time.Second, true},
		{"too soon after the last start", 2, 0.1, admitEvery - time.Millisecond, false},
		{"at the cap", 8, 0, time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			g := &loadGate{busy: func() float64 { return tc.busy }, stop: func() {}, max: 8,
				now: func() time.Time { return now }, last: t0.Add(-tc.since)}
			if got := g.admit(tc.running); got != tc.want {
				t.Fatalf("admit(%d) at busy %.2f, %v after the last start = %v, want %v", tc.running, tc.busy, tc.since, got, tc.want)
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

// TestCPUMeter: the meter reads this machine's /proc/stat and gives a
// fraction in [0, 1] once it has two samples.
func TestCPUMeter(t *testing.T) {
	m, err := newCPUMeter(300 * time.Millisecond)
	if err != nil && runtime.GOOS != "linux" {
		t.Skipf("no /proc/stat on %s (RunMany falls back to a fixed parallelism): %v", runtime.GOOS, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if b := m.busy(); b != 1 {
		t.Fatalf("busy before a second sample = %v, want 1 (do not admit on no data)", b)
	}
	time.Sleep(3 * meterTick)
	if b := m.busy(); b < 0 || b > 1 {
		t.Fatalf("busy = %v, want within [0, 1]", b)
	}
}

package admission

import (
	"fmt"
	"math"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// TestLoadGate: up to the floor a job starts whatever the load; beyond it
// only below the cap, Every after the previous start, while the machine
// was less than maxBusy busy, the processes that are not the suite's used
// less than othersMax of it, and the suite, with the runs started within
// the last window counted as pending, stayed under its budget.
func TestLoadGate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const cpus = 2
	for _, tc := range []struct {
		name         string
		running      int
		machine, own float64 // CPUs busy
		since        time.Duration
		recent       []time.Duration // admissions this long ago
		want         bool
		ended        []time.Duration // ends of runs this long ago
	}{
		{"room", 4, 0.4, 0.2, time.Second, nil, true, nil},
		{"under the floor, machine saturated", 2, 2, 0.4, 0, nil, true, nil},
		{"machine busy", 4, maxBusy * cpus, maxBusy*cpus - 0.1, time.Second, nil, false, nil},
		{"others busy", 4, 1.2, 0.2, time.Second, nil, false, nil},
		{"others just under", 4, othersMax*cpus + 0.19, 0.2, time.Second, nil, true, nil},
		{"suite over its budget", 4, ownBudget * cpus, ownBudget * cpus, time.Second, nil, false, nil},
		{"suite under its budget alone", 4, 1.2, 1.2, time.Second, nil, true, nil},
		// Three runs at 0.3 CPUs each started 200 ms ago will add about
		// 0.72 CPUs the meter has not seen yet.
		{"room taken by runs just started", 4, 1.2, 1.2, 200 * time.Millisecond,
			[]time.Duration{200 * time.Millisecond, 200 * time.Millisecond, 200 * time.Millisecond}, false, nil},
		{"runs started a window ago are in the meter", 4, 1.2, 1.2, time.Second,
			[]time.Duration{time.Second, time.Second, time.Second}, true, nil},
		// Two of six runs ended 200 ms ago: the meter still counts 0.8 of
		// their use (0.3 CPUs each, the window's mean), 0.48 CPUs gone.
		{"room freed by runs just ended", 4, 1.85, 1.8, time.Second, nil, true,
			[]time.Duration{200 * time.Millisecond, 200 * time.Millisecond}},
		{"runs ended a window ago are out of the meter", 4, 1.85, 1.8, time.Second, nil, false,
			[]time.Duration{time.Second, time.Second}},
		{"too soon after the last start", 4, 0.2, 0.1, Every - time.Millisecond, nil, false, nil},
		{"at the cap", 8, 0, 0, time.Second, nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			g := &loadGate{machine: func() float64 { return tc.machine }, own: func() float64 { return tc.own },
				stop: func() {}, floor: 3, max: 8, cpus: cpus, now: func() time.Time { return now }, last: t0.Add(-tc.since)}
			for _, d := range tc.recent {
				g.recent = append(g.recent, t0.Add(-d))
			}
			g.was = tc.running
			for _, d := range tc.ended {
				g.ended = append(g.ended, t0.Add(-d))
			}
			if got := g.Admit(tc.running); got != tc.want {
				t.Fatalf("admit(%d) at %.2f CPUs busy (%.2f the suite's), %v after the last start, %d recent = %v, want %v",
					tc.running, tc.machine, tc.own, tc.since, len(tc.recent), got, tc.want)
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
	// What the child really got is read from its own /proc entry over the
	// same stretch: on a loaded machine a spinning child may get a tenth
	// of a CPU, and the meter must see that tenth, not an assumed core.
	child := "/proc/" + fmt.Sprint(cmd.Process.Pid) + "/stat"
	time.Sleep(2 * meterTick)
	c0, err := procCPU(child)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	time.Sleep(busyWindow + meterTick)
	b := m.busy()
	c1, err := procCPU(child)
	if err != nil {
		t.Fatal(err)
	}
	got := float64(c1-c0) / float64(time.Since(t0))
	// The meter's window is the last second of 100 ms samples, the child's
	// the whole stretch, and /proc counts in 10 ms ticks: half the child's
	// share, less a tick's worth, is what the meter must at least see.
	if b < got/2-0.05 || b > float64(runtime.NumCPU())+0.2 {
		t.Fatalf("busy with a spinning child = %.2f CPUs; the child itself used %.2f", b, got)
	}
	// The machine's figure counts the same child, and is a share of at
	// most every CPU.
	mm, err := newCPUMeter(time.Second, readMachineCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer mm.close()
	time.Sleep(3 * meterTick)
	if b := mm.busy(); b < 0.3 || b > float64(runtime.NumCPU())+0.2 {
		t.Fatalf("machine busy with a spinning child = %.2f CPUs, want within [0.3, NumCPU]", b)
	}
}

// TestLoadGateGuards: past the floor, no run starts once the process holds
// half its open-file limit, or while under a quarter of the machine's
// memory is available, whatever room the CPUs have; under the floor one
// still does, and a figure that cannot be read guards nothing.
func TestLoadGateGuards(t *testing.T) {
	files := func(open, limit int) func() (int, int) { return func() (int, int) { return open, limit } }
	memory := func(avail, total int64) func() (int64, int64) { return func() (int64, int64) { return avail, total } }
	for _, tc := range []struct {
		name    string
		running int
		fds     func() (int, int)
		mem     func() (int64, int64)
		want    bool
	}{
		{"few files open", 4, files(400, 1000), nil, true},
		{"half the file limit open", 4, files(500, 1000), nil, false},
		{"files: under the floor", 2, files(900, 1000), nil, true},
		{"file limit unknown", 4, files(-1, -1), nil, true},
		{"plenty of memory", 4, nil, memory(600, 1000), true},
		{"under a quarter of the memory available", 4, nil, memory(200, 1000), false},
		{"memory: under the floor", 2, nil, memory(100, 1000), true},
		{"memory unknown", 4, nil, memory(-1, -1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1000, 0)
			g := &loadGate{machine: func() float64 { return 0.2 }, own: func() float64 { return 0.1 },
				stop: func() {}, floor: 3, max: 8, cpus: 2, now: func() time.Time { return now },
				last: now.Add(-time.Second), fds: tc.fds, mem: tc.mem}
			if got := g.Admit(tc.running); got != tc.want {
				t.Fatalf("admit(%d) = %v, want %v", tc.running, got, tc.want)
			}
		})
	}
	if runtime.GOOS != "linux" {
		return
	}
	if open, limit := openFiles(); open < 3 || limit < open {
		t.Fatalf("openFiles() = %d, %d: want at least stdin, stdout and stderr, under the limit", open, limit)
	}
	if avail, total := machineMemory(); avail <= 0 || total < avail {
		t.Fatalf("machineMemory() = %d, %d kB: want some available, at most the total", avail, total)
	}
}

package scenarios

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// Parallelism that follows the machine. A run spends most of its wall time
// waiting (its clients sleep through their critical sections and retry
// delays, its servers idle), so many fit on a CPU: the whole suite uses
// about 0.16 CPU-seconds a second at three runs at a time. But a run whose
// process is not scheduled records harness stalls, and a stall inside a
// hold makes its verdict inconclusive (the stall rule), so the runs must
// not crowd the CPUs themselves: their bursts (servers and client
// processes starting, a long history checked) land in the others' traffic.
//
// With parallel ≤ 0, RunMany starts a job while the suite itself leaves
// room: fewer than autoMaxPerCPU runs per CPU are running, lockstorm and
// the processes it started (servers, Sentinels, client processes) used
// less than ownBudget of the CPUs over the last busyWindow, and at least
// admitEvery passed since the last start (a run's set-up shows in the
// figure only once it runs). One run always may start.
//
// What others run on the machine does not hold the suite back: each run's
// exposure to their load is its own duration, whatever runs beside it,
// and running fewer at a time would not make the stalls they cause fewer
// or shorter, only the suite longer. Those stalls are the stall rule's to
// judge.
const (
	autoMaxPerCPU = 4
	ownBudget     = 0.25 // of all CPUs: half a core on two
	busyWindow    = time.Second
	admitEvery    = 250 * time.Millisecond
)

// gate decides when RunMany starts the next job.
type gate interface {
	// admit says whether another job may start with running running.
	admit(running int) bool
	// close stops whatever the gate measures with.
	close()
}

// fixedGate is --parallel N: N at a time, whatever the load.
type fixedGate int

func (g fixedGate) admit(running int) bool { return running < int(g) }
func (fixedGate) close()                   {}

// newGate is the gate for RunMany's parallel argument: fixed when
// positive, else following the suite's own CPU use (a fixed NumCPU+1 where
// it cannot be read).
func newGate(parallel int) gate {
	if parallel > 0 {
		return fixedGate(parallel)
	}
	m, err := newCPUMeter(busyWindow, readOwnCPU)
	if err != nil {
		return fixedGate(runtime.NumCPU() + 1)
	}
	n := runtime.NumCPU()
	return &loadGate{busy: m.busy, stop: m.close, max: autoMaxPerCPU * n, budget: ownBudget * float64(n), now: time.Now}
}

// loadGate admits jobs while the suite leaves room on the CPUs.
type loadGate struct {
	busy   func() float64 // CPUs the suite used over the last window
	stop   func()
	max    int
	budget float64 // in CPUs
	now    func() time.Time
	last   time.Time // the last admission
}

func (g *loadGate) admit(running int) bool {
	now := g.now()
	ok := running == 0 ||
		(running < g.max && now.Sub(g.last) >= admitEvery && g.busy() < g.budget)
	if ok {
		g.last = now
	}
	return ok
}

func (g *loadGate) close() { g.stop() }

// cpuMeter samples a CPU-time counter and tells how many CPUs it used, on
// average, over the last window.
type cpuMeter struct {
	read    func() (time.Duration, error)
	mu      sync.Mutex
	samples []cpuSample // oldest first, spanning about the window
	window  time.Duration
	stop    chan struct{}
	done    chan struct{}
}

type cpuSample struct {
	at  time.Time
	cpu time.Duration
}

// meterTick is how often the meter samples.
const meterTick = 100 * time.Millisecond

func newCPUMeter(window time.Duration, read func() (time.Duration, error)) (*cpuMeter, error) {
	c, err := read()
	if err != nil {
		return nil, err
	}
	m := &cpuMeter{read: read, samples: []cpuSample{{time.Now(), c}}, window: window, stop: make(chan struct{}), done: make(chan struct{})}
	go m.loop()
	return m, nil
}

func (m *cpuMeter) loop() {
	defer close(m.done)
	t := time.NewTicker(meterTick)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		c, err := m.read()
		if err != nil {
			continue
		}
		s := cpuSample{time.Now(), c}
		m.mu.Lock()
		m.samples = append(m.samples, s)
		// Keep one sample at least a window old, so busy spans the window.
		for len(m.samples) > 2 && s.at.Sub(m.samples[1].at) >= m.window {
			m.samples = m.samples[1:]
		}
		m.mu.Unlock()
	}
}

// busy is the CPUs used between the oldest and newest samples; +Inf (no
// room) until two samples exist.
func (m *cpuMeter) busy() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, b := m.samples[0], m.samples[len(m.samples)-1]
	if !b.at.After(a.at) {
		return math.Inf(1)
	}
	return max(float64(b.cpu-a.cpu), 0) / float64(b.at.Sub(a.at))
}

func (m *cpuMeter) close() {
	close(m.stop)
	<-m.done
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// readOwnCPU is the CPU time of this process and of every process it
// started: its own and its reaped children's times from /proc/self/stat,
// plus each live child's (and its reaped children's) from its own stat,
// found through /proc/self/task/*/children. A child's time moves from the
// live sum to the reaped one when it is waited for, so the total goes on.
func readOwnCPU() (time.Duration, error) {
	self, err := procCPU("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	tasks, err := filepath.Glob("/proc/self/task/*/children")
	if err != nil {
		return 0, err
	}
	total := self
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the thread exited
		}
		for _, pid := range bytes.Fields(b) {
			if c, err := procCPU("/proc/" + string(pid) + "/stat"); err == nil {
				total += c
			}
		}
	}
	return total, nil
}

// procCPU reads utime, stime, cutime and cstime (fields 14 to 17) of a
// /proc/PID/stat file.
func procCPU(path string) (time.Duration, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	// pid (comm) state ...: comm may hold spaces and parentheses, so
	// fields are counted from the last ')'; utime is the 12th after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%s: no ')'", path)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 15 {
		return 0, fmt.Errorf("%s: %d fields", path, len(f))
	}
	var ticks int64
	for _, s := range f[11:15] {
		v, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		ticks += v
	}
	return time.Duration(ticks) * clockTick, nil
}

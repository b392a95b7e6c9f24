package scenarios

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Parallelism that follows the machine. A run spends most of its wall time
// waiting (its clients sleep through their critical sections and retry
// delays), so several fit on a CPU; but a run whose process is not
// scheduled records harness stalls, and a stall inside a hold makes its
// verdict inconclusive (the stall rule). How many runs fit therefore
// depends on what they do and on what else the machine runs (other jobs of
// a CI host): a fixed number is either slow on an idle machine or unfair
// to the verdicts on a busy one.
//
// With parallel ≤ 0, RunMany starts a job when the machine has CPU to
// spare: fewer than autoMaxPerCPU runs per CPU are running, the CPUs were
// on average less than maxBusy busy over the last busyWindow (all
// processes: the runs' servers and client processes count, and so does
// everybody else), and at least admitEvery passed since the last start (a
// run's set-up shows in the load only once it runs). One run always may
// start, so a busy machine is slow, never stuck.
const (
	autoMaxPerCPU = 4
	maxBusy       = 0.6
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
// positive, else following the load (a fixed NumCPU+1 where the load
// cannot be read).
func newGate(parallel int) gate {
	if parallel > 0 {
		return fixedGate(parallel)
	}
	m, err := newCPUMeter(busyWindow)
	if err != nil {
		return fixedGate(runtime.NumCPU() + 1)
	}
	return &loadGate{busy: m.busy, stop: m.close, max: autoMaxPerCPU * runtime.NumCPU(), now: time.Now}
}

// loadGate admits jobs while the CPUs have room (see above).
type loadGate struct {
	busy func() float64 // the CPUs' busy fraction over the last window
	stop func()
	max  int
	now  func() time.Time
	last time.Time // the last admission
}

func (g *loadGate) admit(running int) bool {
	now := g.now()
	ok := running == 0 ||
		(running < g.max && now.Sub(g.last) >= admitEvery && g.busy() < maxBusy)
	if ok {
		g.last = now
	}
	return ok
}

func (g *loadGate) close() { g.stop() }

// cpuMeter samples /proc/stat and tells how busy the CPUs were, on
// average, over the last window.
type cpuMeter struct {
	mu      sync.Mutex
	samples []cpuSample // oldest first, spanning about the window
	window  time.Duration
	stop    chan struct{}
	done    chan struct{}
}

type cpuSample struct {
	at          time.Time
	busy, total uint64 // jiffies since boot, over all CPUs
}

// meterTick is how often the meter samples.
const meterTick = 100 * time.Millisecond

func newCPUMeter(window time.Duration) (*cpuMeter, error) {
	s, err := readCPU()
	if err != nil {
		return nil, err
	}
	m := &cpuMeter{samples: []cpuSample{s}, window: window, stop: make(chan struct{}), done: make(chan struct{})}
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
		s, err := readCPU()
		if err != nil {
			continue
		}
		m.mu.Lock()
		m.samples = append(m.samples, s)
		// Keep one sample at least a window old, so busy spans the window.
		for len(m.samples) > 2 && s.at.Sub(m.samples[1].at) >= m.window {
			m.samples = m.samples[1:]
		}
		m.mu.Unlock()
	}
}

// busy is the fraction of CPU time (0..1, over every CPU) spent on
// anything but idle and I/O wait between the oldest and newest samples; 1
// (busy) until two samples exist.
func (m *cpuMeter) busy() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, b := m.samples[0], m.samples[len(m.samples)-1]
	if b.total <= a.total {
		return 1
	}
	return float64(b.busy-a.busy) / float64(b.total-a.total)
}

func (m *cpuMeter) close() {
	close(m.stop)
	<-m.done
}

// readCPU reads the aggregate "cpu" line of /proc/stat: user nice system
// idle iowait irq softirq steal (guest time is inside user already).
func readCPU() (cpuSample, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return cpuSample{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuSample{}, fmt.Errorf("/proc/stat: %w", err)
	}
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return cpuSample{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	s := cpuSample{at: time.Now()}
	for i, f := range fields[1:9] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return cpuSample{}, fmt.Errorf("/proc/stat: %w", err)
		}
		s.total += v
		if i != 3 && i != 4 { // idle, iowait
			s.busy += v
		}
	}
	return s, nil
}

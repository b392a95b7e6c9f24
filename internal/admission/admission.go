// Package admission decides when the next of a batch of jobs may start:
// a fixed count at a time, or a floor and more while the machine's CPUs
// have room. It knows nothing of locks or runs; the runner's RunMany
// starts its jobs through it.
package admission

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Parallelism that follows the machine. A run spends most of its wall time
// waiting (its clients sleep through their critical sections and retry
// delays, its servers idle), so many fit on a CPU. But a run whose
// process is not scheduled records harness stalls, and a stall inside a
// hold makes its verdict inconclusive (the stall rule): runs must not be
// added where the CPUs have no room left.
//
// With parallel ≤ 0, New's gate (RunMany's) keeps up to floorPerCPU×NumCPU+1 runs going
// (three on two CPUs: the fixed default this replaces), and starts more
// only while there is room: fewer than autoMaxPerCPU runs per CPU are
// running, at least Every passed since the last start, the processes that
// are not the suite's used less than othersMax of the CPUs and everything
// less than maxBusy over the last busyWindow, and lockstorm and the
// processes it started (servers, Sentinels, client processes), counting
// the runs started too recently to show in the meter, used less than
// ownBudget of them, the process holds under half its open-file limit
// (filesLeft) and a quarter of the machine's memory is available
// (memoryLeft). A loaded machine leaves no room (more runs than the
// floor there turn into unexpected verdicts): the others' figure guards
// it, since the suite's own use alone would read low there (a starved
// process uses little).
//
// On a quiet machine the own budget sets the suite's wall time: runs are
// started until their use reaches it, so the wall is about the suite's CPU
// time over the budget. The budget and the cap per CPU are as high as they
// go without changing a verdict or lengthening the harness's longest stall,
// quiet or beside stress-ng; a loaded machine is the others' figure's to
// guard, not the budget's.
//
// A run's use shows in the meter only as it runs (its set-up, then its
// traffic), so a run started less than a window ago is counted as a share
// of the budget (pending) on top of what the meter saw: the suite's mean
// use per run, or a fair share of the budget per run at most, whichever
// is larger, less the part of the window it has run. Every can then be
// short: the starts are spaced by the estimate, not by the meter's lag.
// The lag the other way: a run that ended less than a window ago is still
// in the meter for the part of the window it ran, and that part of the
// suite's mean use per run is taken off (freed), so a run's room is given
// again when it ends, not a second later.
const (
	floorPerCPU   = 1
	autoMaxPerCPU = 12
	maxBusy       = 0.95
	othersMax     = 0.2
	ownBudget     = OwnBudget
	busyWindow    = time.Second
)

// OwnBudget is the share of all CPUs that lockstorm and the processes it
// started may use before no more runs start (see above).
const OwnBudget = 0.9 // of all CPUs: 1.8 cores on two

// Every is the least time between two starts beyond the floor.
const Every = 100 * time.Millisecond

// Gate decides when the next job starts (RunMany's).
type Gate interface {
	// Admit says whether another job may start with running running.
	Admit(running int) bool
	// Close stops whatever the gate measures with.
	Close()
}

// fixedGate is --parallel N: N at a time, whatever the load.
type fixedGate int

// Admit implements Gate.
func (g fixedGate) Admit(running int) bool { return running < int(g) }

// Close implements Gate.
func (fixedGate) Close() {}

// New is the gate for a parallel argument (RunMany's): fixed when
// positive, else following the load (the floor where it cannot be read).
func New(parallel int) Gate {
	n := runtime.NumCPU()
	floor := floorPerCPU*n + 1
	if parallel > 0 {
		return fixedGate(parallel)
	}
	machine, err := newCPUMeter(busyWindow, readMachineCPU)
	if err != nil {
		return fixedGate(floor)
	}
	own, err := newCPUMeter(busyWindow, readOwnCPU)
	if err != nil {
		machine.close()
		return fixedGate(floor)
	}
	return &loadGate{machine: machine.busy, own: own.busy, stop: func() { machine.close(); own.close() },
		floor: floor, max: autoMaxPerCPU * n, cpus: float64(n), now: time.Now, fds: openFiles, mem: machineMemory}
}

// loadGate admits jobs up to the floor, and beyond it while the CPUs have
// room.
type loadGate struct {
	machine func() float64 // CPUs busy over the last window, everything
	own     func() float64 // CPUs the suite used over the last window
	stop    func()
	floor   int
	max     int
	cpus    float64
	now     func() time.Time
	last    time.Time   // the last admission
	recent  []time.Time // the admissions of the last busyWindow
	// ended are the ends of runs within the last busyWindow, seen as the
	// running count falling between calls (was: the count after the last
	// call, with its admission).
	ended []time.Time
	was   int
	// fds is how many files the process has open and may open (nil:
	// unknown, no guard).
	fds func() (open, limit int)
	// mem is the machine's available and total memory (nil: unknown, no
	// guard).
	mem func() (available, total int64)
}

// Admit implements Gate.
func (g *loadGate) Admit(running int) bool {
	now := g.now()
	for len(g.recent) > 0 && now.Sub(g.recent[0]) >= busyWindow {
		g.recent = g.recent[1:]
	}
	for len(g.ended) > 0 && now.Sub(g.ended[0]) >= busyWindow {
		g.ended = g.ended[1:]
	}
	for ; g.was > running; g.was-- {
		g.ended = append(g.ended, now)
	}
	g.was = running
	ok := running < g.floor
	if !ok && running < g.max && now.Sub(g.last) >= Every {
		machine, own := g.machine(), g.own()
		// The runs that ended within the window are still in the meter
		// for the part of it they ran: their room is free now, not once
		// the window has passed (seen as the lag of a battery's last
		// seconds, where runs end one after another).
		freed := g.freed(now, running, own)
		ok = machine-freed < maxBusy*g.cpus && machine-own < othersMax*g.cpus &&
			own-freed+g.pending(now, running, own) < ownBudget*g.cpus && g.filesLeft() && g.memoryLeft()
	}
	if ok {
		g.last = now
		g.recent = append(g.recent, now)
		g.was++
	}
	return ok
}

// filesLeft says the process has used less than fdShare of its open-file
// limit: every run holds its links' listeners and connections (a Redis
// Cluster run about 300 descriptors), and run --all at twelve runs per CPU
// had 7461 open on two CPUs; a machine whose limit is a few thousand gets
// its runs' room from the limit, not from its CPUs, rather than failing
// runs with "too many open files".
func (g *loadGate) filesLeft() bool {
	if g.fds == nil {
		return true
	}
	open, limit := g.fds()
	return limit <= 0 || float64(open) < fdShare*float64(limit)
}

// fdShare is the part of the open-file limit beyond which no run starts
// past the floor: a run started just under it opens its descriptors, and
// the runs under way dial new connections as they go.
const fdShare = 0.5

// openFiles is how many descriptors the process has open (the entries of
// /proc/self/fd) and its soft limit (-1 each when unknown).
func openFiles() (open, limit int) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return -1, -1
	}
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return -1, -1
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return -1, -1
	}
	return len(names), int(min(rl.Cur, math.MaxInt32))
}

// memoryLeft says the machine has at least memShare of its memory
// available: a run of client processes starts one per client (contention
// with node redis-lock.js: 16 processes of 78 MB resident each), and at
// twelve runs per CPU a battery of them could ask a CI machine for more
// than it has, where swapping would stall every run and the OOM killer
// end some.
func (g *loadGate) memoryLeft() bool {
	if g.mem == nil {
		return true
	}
	avail, total := g.mem()
	return total <= 0 || float64(avail) >= memShare*float64(total)
}

// memShare is the part of the machine's memory that must stay available
// for a run to start past the floor.
const memShare = 0.25

// machineMemory is MemAvailable and MemTotal of /proc/meminfo, in kB (-1
// each when unknown).
func machineMemory() (available, total int64) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return -1, -1
	}
	available, total = -1, -1
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "MemAvailable:":
			available = v
		case "MemTotal:":
			total = v
		}
	}
	if available < 0 {
		return -1, -1
	}
	return available, total
}

// pending is what the runs started within the last window will add to
// the suite's use once the meter sees them whole: each, the suite's mean
// use per run (or a fair share of the budget, the most runs could each
// have, when that is more) for the part of the window it has not run.
func (g *loadGate) pending(now time.Time, running int, own float64) float64 {
	per := ownBudget * g.cpus / float64(g.max)
	if running > 0 {
		per = max(per, own/float64(running))
	}
	return per * unseen(now, g.recent)
}

// freed is the part of the suite's use over the last window that came
// from runs ended within it: each, the mean use per run of the window's
// runs (no more: room counted that is not there would start runs into a
// busy machine) for the part of the window it ran.
func (g *loadGate) freed(now time.Time, running int, own float64) float64 {
	if running+len(g.ended) == 0 {
		return 0
	}
	return own / float64(running+len(g.ended)) * unseen(now, g.ended)
}

// unseen sums, over times within the last window, the part of the window
// still to pass since each.
func unseen(now time.Time, times []time.Time) float64 {
	var p float64
	for _, at := range times {
		p += 1 - float64(now.Sub(at))/float64(busyWindow)
	}
	return p
}

// Close implements Gate.
func (g *loadGate) Close() { g.stop() }

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

// readMachineCPU is the CPU time every CPU spent on anything but idle and
// I/O wait: the aggregate line of /proc/stat (user nice system idle iowait
// irq softirq steal; guest time is inside user already).
func readMachineCPU() (time.Duration, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("/proc/stat: %w", err)
	}
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for i, f := range fields[1:9] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		if i != 3 && i != 4 { // idle, iowait
			ticks += v
		}
	}
	return time.Duration(ticks) * clockTick, nil
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
	// The threads' names, then each one's children file by name: a Glob
	// of /proc/self/task/*/children read every thread's directory to match
	// "children", and that cost the meter 3% of two CPUs through a suite
	// (perf: proc_pident_readdir, d_lookup), charged to the suite's own use.
	f, err := os.Open("/proc/self/task")
	if err != nil {
		return 0, err
	}
	tasks, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return 0, err
	}
	total := self
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t + "/children")
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

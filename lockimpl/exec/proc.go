package exec

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// spawnReq asks the spawner thread to start a command.
type spawnReq struct {
	cmd  *osexec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   = make(chan spawnReq)
)

// start starts cmd from one OS thread that never exits. PR_SET_PDEATHSIG
// fires when the *thread* that forked the child exits, not the process; Go
// may retire threads, so a child forked from an arbitrary goroutine could be
// killed while lockstorm is alive. A goroutine locked to its thread for the
// life of the process gives the signal the meaning we want: the child dies
// with lockstorm.
func start(cmd *osexec.Cmd) error {
	spawnOnce.Do(func() {
		go func() {
			runtime.LockOSThread()
			for r := range spawnCh {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawnCh <- spawnReq{cmd, done}
	return <-done
}

// message is one line from the client's stdout.
type message struct {
	verb string   // hello, ok, fail, error
	args []string // the rest, split on spaces
	raw  string
}

// proc is one running client process and the goroutines that read it.
type proc struct {
	cmd    *osexec.Cmd
	pid    int
	log    *slog.Logger
	wmu    sync.Mutex
	stdin  io.WriteCloser
	msgs   chan message  // replies, in order
	exited chan struct{} // closed once the process is reaped
	// points is told every "point NAME" line; it answers with go itself.
	points func(p *proc, name string)
	// lost is told every "lost TOKEN" line (the library's own lost-lock
	// signal), in order with the replies; nil ignores them.
	lost func(token string)

	mu       sync.Mutex
	stderr   []string // last lines, for the error of a death
	crashErr error    // set when a failpoint crashed the client
	killed   bool     // lockstorm killed it (crash fault, timeout, end)
	waitErr  error
}

// startProc starts argv with env and begins reading its output.
func startProc(argv, env []string, log *slog.Logger, points func(*proc, string)) (*proc, error) {
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = start(cmd)
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("start %s: %w", strings.Join(argv, " "), err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, log: log, stdin: stdin, msgs: make(chan message, 16),
		exited: make(chan struct{}), points: points}
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); p.readStdout(outR) }()
	go func() { defer readers.Done(); p.readStderr(errR) }()
	go func() {
		readers.Wait() // both pipes at EOF: every writer is gone
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(p.exited)
	}()
	return p, nil
}

func (p *proc) readStdout(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		f := strings.Split(line, " ")
		switch f[0] {
		case "point":
			if len(f) == 2 && f[1] != "" {
				go p.points(p, f[1])
				continue
			}
		case "lost":
			if len(f) == 2 && f[1] != "" {
				if p.lost != nil {
					p.lost(f[1])
				}
				continue
			}
		case "log":
			p.log.Debug("client process", "pid", p.pid, "log", strings.TrimPrefix(line, "log "))
			continue
		}
		p.msgs <- message{verb: f[0], args: f[1:], raw: line}
	}
	// A line longer than the buffer is a protocol error too: show it as one.
	if err := sc.Err(); err != nil {
		p.msgs <- message{verb: "", raw: "unreadable output: " + err.Error()}
	}
	// Drain whatever the dying process still writes, so it never blocks.
	_, _ = io.Copy(io.Discard, r)
}

func (p *proc) readStderr(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		p.log.Debug("client process stderr", "pid", p.pid, "line", line)
		p.mu.Lock()
		p.stderr = append(p.stderr, line)
		if len(p.stderr) > 5 {
			p.stderr = p.stderr[len(p.stderr)-5:]
		}
		p.mu.Unlock()
	}
	_, _ = io.Copy(io.Discard, r)
}

// send writes one line to the client.
func (p *proc) send(line string) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err := io.WriteString(p.stdin, line+"\n")
	return err
}

// signal sends sig to the client's whole process group (a runtime's helper
// processes stop and die with it).
func (p *proc) signal(sig syscall.Signal) error {
	err := syscall.Kill(-p.pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // already gone
	}
	return err
}

// kill ends the process group and waits (bounded) until it is reaped.
func (p *proc) kill() {
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	_ = p.signal(syscall.SIGKILL)
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		p.log.Warn("client process did not exit after SIGKILL", "pid", p.pid)
	}
}

// alive says whether the process has not been reaped yet.
func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// deathText describes how the process ended, with its last stderr lines.
func (p *proc) deathText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := fmt.Sprintf("client process %d exited", p.pid)
	if p.waitErr != nil {
		s = fmt.Sprintf("client process %d: %v", p.pid, p.waitErr)
	}
	if len(p.stderr) > 0 {
		s += ": " + strings.Join(p.stderr, " | ")
	}
	return s
}

// stateOf reads the state letter of pid from /proc (R, S, T, Z, ...).
func stateOf(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	s := string(b)
	rp := strings.LastIndexByte(s, ')')
	if rp < 0 || rp+2 >= len(s) {
		return "", fmt.Errorf("/proc/%d/stat: unexpected %q", pid, s)
	}
	return s[rp+2 : rp+3], nil
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

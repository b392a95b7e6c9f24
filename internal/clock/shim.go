// Package clock is the LD_PRELOAD clock shim and its offset files: the
// harness stores an offset in a mapped file, and a process it started with
// the shim preloaded (a spawned redis-server, a client program) reads real
// time plus that offset. The cluster moves servers' clocks with it, and
// lockimpl/exec its client processes' clocks.
package clock

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// source is the LD_PRELOAD clock shim, embedded so that a fresh
// clone can build it on demand (go test, lockstorm run) without make.
//
//go:embed clockshim/clockshim.c
var source []byte

// FileEnv names the environment variable through which the clock shim
// learns the path of its offset file.
const FileEnv = "LOCKSTORM_CLOCK_FILE"

// ShimEnv names the environment variable through which make hands over
// the shim it built (build/clockshim.so).
const ShimEnv = "LOCKSTORM_CLOCKSHIM"

// ErrNoGCC is returned by EnsureShim when the shim must be compiled and no
// C compiler is installed.
var ErrNoGCC = errors.New("gcc not found on PATH: it is needed to build the redis-server clock shim (apt-get install -y gcc, or build it with make and pass Options.ClockShim)")

// EnsureShim returns the path of a compiled clock shim, building it with gcc
// when missing. The file name carries a hash of the embedded source, so an
// edited shim is rebuilt and a stale one is never loaded. dir "" means the
// user cache directory ($XDG_CACHE_HOME or ~/.cache)/lockstorm, falling back
// to the temporary directory when there is no usable home. The build writes
// to a temporary name and renames it, so concurrent test binaries racing to
// build the same shim never see a half-written library.
func EnsureShim(dir string) (string, error) {
	if dir == "" {
		if c, err := os.UserCacheDir(); err == nil {
			dir = filepath.Join(c, "lockstorm")
		} else {
			dir = filepath.Join(os.TempDir(), "lockstorm-cache")
		}
	}
	sum := sha256.Sum256(source)
	out := filepath.Join(dir, "clockshim-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return "", ErrNoGCC
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("clock shim cache dir: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return "", fmt.Errorf("clock shim build dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "clockshim.c")
	if err := os.WriteFile(src, source, 0o644); err != nil {
		return "", err
	}
	so := filepath.Join(tmp, "clockshim.so")
	cmd := exec.Command(gcc, "-shared", "-fPIC", "-O2", "-Wall", "-o", so, src)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build clock shim: %v: %s", err, b)
	}
	if err := os.Rename(so, out); err != nil {
		return "", fmt.Errorf("install clock shim: %w", err)
	}
	return out, nil
}

// mapping is the harness's side of a server's clock offset: the 8-byte
// file the shim maps, mapped here too. Both sides map the same page, so one
// aligned atomic 64-bit store is seen whole by the server's next clock read.
// (A pwrite would not do: the kernel's copy into the page cache may go byte
// by byte, and the shim could read a torn offset.)
type mapping struct {
	mu  sync.RWMutex // excludes close during a load or store
	mem []byte       // nil once closed
}

// openMapping creates (or reopens, keeping its value) the offset file at
// path and maps it.
func openMapping(path string) (*mapping, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("clock file: %w", err)
	}
	defer f.Close()
	// Never shrink: the shim would fault reading past the end of the file.
	if st, err := f.Stat(); err != nil {
		return nil, err
	} else if st.Size() < 8 {
		if err := f.Truncate(8); err != nil {
			return nil, fmt.Errorf("clock file: %w", err)
		}
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map clock file: %w", err)
	}
	return &mapping{mem: mem}, nil
}

// word is the mapped offset; mmap returns page-aligned memory, so it is
// 8-byte aligned as atomic operations require.
func (c *mapping) word() *int64 { return (*int64)(unsafe.Pointer(&c.mem[0])) }

// set stores d; after close it does nothing (the servers are gone).
func (c *mapping) set(d time.Duration) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.mem != nil {
		atomic.StoreInt64(c.word(), int64(d))
	}
}

func (c *mapping) get() time.Duration {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.mem == nil {
		return 0
	}
	return time.Duration(atomic.LoadInt64(c.word()))
}

func (c *mapping) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mem == nil {
		return nil
	}
	err := syscall.Munmap(c.mem)
	c.mem = nil
	return err
}

package clock

import (
	"fmt"
	"os"
	"time"
)

// File is the harness's side of one process's clock offset under the
// LD_PRELOAD clock shim: the process reads real time plus the offset stored
// here from its next wall-clock read on. Client processes (lockimpl/exec) use
// it as redis-server does.
type File struct {
	c    *mapping
	path string
}

// Open creates (or reopens, keeping its value) the offset file at path and
// maps it.
func Open(path string) (*File, error) {
	c, err := openMapping(path)
	if err != nil {
		return nil, err
	}
	return &File{c: c, path: path}, nil
}

// Path is the file to hand to the process in $LOCKSTORM_CLOCK_FILE.
func (f *File) Path() string { return f.path }

// Set stores the offset from real time; after Close it does nothing.
func (f *File) Set(d time.Duration) { f.c.set(d) }

// Get returns the stored offset.
func (f *File) Get() time.Duration { return f.c.get() }

// Close unmaps and removes the file.
func (f *File) Close() error {
	err := f.c.close()
	if rerr := os.Remove(f.path); err == nil && rerr != nil && !os.IsNotExist(rerr) {
		err = rerr
	}
	return err
}

// ShimPath returns the clock shim to preload: make's build (exported in
// $LOCKSTORM_CLOCKSHIM) when present, else one built on demand into the
// user's cache (EnsureShim), which needs gcc.
func ShimPath() (string, error) {
	if p := os.Getenv(ShimEnv); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := EnsureShim("")
	if err != nil {
		return "", fmt.Errorf("clock shim: %w", err)
	}
	return p, nil
}

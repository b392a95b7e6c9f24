package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/lockstorm/lockstorm/reports"
)

// Output paths are checked before anything starts, so a run is never
// carried out only to lose its results to a path that cannot be written.

// checkOutDir says why dir cannot hold run folders: it must be a directory
// we can write into, or not exist yet under one we can write into.
func checkOutDir(flagName, dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return usage("%s %s: not a directory", flagName, dir)
	case err == nil:
		return writable(flagName, dir, dir)
	case !errors.Is(err, os.ErrNotExist):
		return usage("%s %s: %v", flagName, dir, unwrapPath(err))
	}
	return creatable(flagName, dir)
}

// checkOutFile says why file cannot be written: it must be a writable
// regular file, or not exist yet in a directory we can write into.
func checkOutFile(flagName, file string) error {
	st, err := os.Stat(file)
	switch {
	case err == nil && st.IsDir():
		return usage("%s %s: is a directory", flagName, file)
	case err == nil:
		if err := syscall.Access(file, 2 /* W_OK */); err != nil {
			return usage("%s %s: not writable: %v", flagName, file, err)
		}
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return usage("%s %s: %v", flagName, file, unwrapPath(err))
	}
	parent := filepath.Dir(file)
	pst, err := os.Stat(parent)
	if err != nil {
		return usage("%s %s: folder %s: %v", flagName, file, parent, unwrapPath(err))
	}
	if !pst.IsDir() {
		return usage("%s %s: %s is not a directory", flagName, file, parent)
	}
	return writable(flagName, file, parent)
}

// creatable checks that the nearest existing ancestor of path is a
// directory we can write into (MkdirAll will create the rest).
func creatable(flagName, path string) error {
	p := filepath.Clean(path)
	for {
		parent := filepath.Dir(p)
		st, err := os.Stat(parent)
		if err == nil {
			if !st.IsDir() {
				return usage("%s %s: %s is not a directory", flagName, path, parent)
			}
			return writable(flagName, path, parent)
		}
		if !errors.Is(err, os.ErrNotExist) {
			return usage("%s %s: %v", flagName, path, unwrapPath(err))
		}
		if parent == p {
			return usage("%s %s: no existing parent folder", flagName, path)
		}
		p = parent
	}
}

func writable(flagName, path, dir string) error {
	if err := syscall.Access(dir, 2|1 /* W_OK|X_OK */); err != nil {
		return usage("%s %s: cannot write in %s: %v", flagName, path, dir, err)
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s", pe.Err)
	}
	return err
}

// runFolderLine says where a single run's folder went (replay, shrink and
// check take it), or why it was not kept; a suite says so with its page.
func runFolderLine(f *runFlags, r reports.Row) string {
	switch {
	case r.RunDir != "":
		return "run folder: " + r.RunDir + " (timeline.html, history.jsonl; lockstorm replay|shrink|check take it)"
	case f.keep == reports.KeepNone:
		return "run folder: not kept (--keep none)"
	}
	return "run folder: not kept (a safe run as expected; --keep all keeps every run)"
}

package spec

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// checkProgram checks an exec variant's command and, when the limits allow
// programs to start, asks the program hello (bounded by lockimpl/exec's
// start-up timeout): a client program that is missing or does not speak
// the protocol is bad input, found before anything starts. What it
// declares is kept for Resolve; a program not allowed to start is known by
// its command line only.
func (v *validation) checkProgram(name string, argv []string) error {
	s := v.s
	field := "variants." + name + ".exec"
	if len(argv) == 0 || argv[0] == "" {
		return v.bad(field, "empty: give the program and its arguments, e.g. [python3, my_lock.py]")
	}
	prog := argv[0]
	if _, err := osexec.LookPath(prog); err != nil {
		if !strings.Contains(prog, "/") {
			return v.bad(field, "program %q not found on PATH", prog)
		}
		st, serr := os.Stat(prog)
		switch {
		case serr != nil:
			return v.bad(field, "program %q does not exist (a relative path is relative to the directory lockstorm runs in)", prog)
		case st.IsDir():
			return v.bad(field, "program %q is a directory", prog)
		default:
			return v.bad(field, "program %q is not executable (chmod +x it, or name its interpreter first: [python3, %s])", prog, prog)
		}
	}
	if s.programs == nil {
		s.programs = map[string]lockimpl.Info{}
	}
	if !s.limits.AllowExec {
		s.programs[name] = lockimpl.Unasked(name, argv)
		return nil
	}
	info, err := lockimpl.Program(context.Background(), argv)
	if err != nil {
		return v.bad(field, "%v", err)
	}
	s.programs[name] = info
	return nil
}

// NeedsConsent is nil when running name starts no program the user has not
// allowed; else, for an exec variant of a spec loaded without
// Limits.AllowExec, the error at its exec line that names the program and
// the flag that allows it.
func (s *Spec) NeedsConsent(name string) error {
	v, ok := s.Variants[name]
	if !ok || len(v.Exec) == 0 || s.doc == nil || s.limits.AllowExec {
		return nil
	}
	field := "variants." + name + ".exec"
	return &SpecError{File: s.File, Line: s.doc.lineOf(field), Field: field,
		Msg: fmt.Sprintf("runs the program %q, started only with your consent: add --allow-exec if you trust this spec (a spec is data; --dry-run shows what a run starts)", strings.Join(v.Exec, " "))}
}

package main

import (
	"strings"
	"testing"
)

// TestHelpOnEverySubcommand: -h, --help and `help CMD` print the
// command's usage line and its flags on stdout and exit 0, for every
// command `lockstorm help` lists; nothing runs.
func TestHelpOnEverySubcommand(t *testing.T) {
	bin := buildBinary(t)
	top, _, code := runCLI(t, bin, "help")
	if code != 0 {
		t.Fatalf("lockstorm help: exit %d", code)
	}
	for _, c := range commands {
		if !strings.Contains(top, "  "+c.name+" ") {
			t.Errorf("lockstorm help does not list %s:\n%s", c.name, top)
		}
		for _, args := range [][]string{{c.name, "-h"}, {c.name, "--help"}, {"help", c.name}, {c.name, "x", "--help"}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				stdout, stderr, code := runCLI(t, bin, args...)
				if code != 0 || stderr != "" {
					t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr)
				}
				if !strings.HasPrefix(stdout, "usage: lockstorm "+c.name) {
					t.Errorf("stdout does not start with its usage line: %q", stdout)
				}
				// Every command but list has flags, and shows them.
				if c.name != "list" && !strings.Contains(stdout, "\nflags:\n  -") {
					t.Errorf("no flags listed: %q", stdout)
				}
			})
		}
	}
	// A flag a command does not have is still bad input, naming the command.
	for _, c := range commands {
		_, stderr, code := runCLI(t, bin, c.name, "--no-such-flag")
		if code != 2 || !strings.Contains(stderr, c.name+": flag provided but not defined") {
			t.Errorf("%s --no-such-flag: exit %d, stderr %q; want 2 naming the command", c.name, code, stderr)
		}
	}
}

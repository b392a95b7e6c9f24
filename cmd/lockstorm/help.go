package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// commands are the subcommands with their one-line summaries, in the order
// `lockstorm help` lists them; the help test walks this list, so a command
// added here without -h support fails it.
var commands = []struct{ name, summary string }{
	{"list", "the locks on trial, the embedded scenarios, the fault kinds and the failpoints"},
	{"run", "run scenarios against locks and print the verdict table"},
	{"check", "judge saved histories (run folders or history.jsonl) again, without Redis"},
	{"replay", "run a kept run folder again and say whether its verdict came back"},
	{"shrink", "reduce a failing run or scenario to the smallest spec that still fails"},
	{"hunt", "search a lock's exploratory scenarios seed after seed (sim) until a forbidden finding, then shrink it"},
	{"report", "rebuild the suite page (and a merged table) from folders of run folders"},
	{"bench", "measure lock, checker and recorder rates against their goals"},
	{"baseline", "record a lock's verdicts on the battery, for run --baseline"},
}

func commandNames() []string {
	out := make([]string, len(commands))
	for i, c := range commands {
		out[i] = c.name
	}
	return out
}

// topUsage is what `lockstorm`, `lockstorm -h` and `lockstorm help` print.
func topUsage() string {
	var b strings.Builder
	b.WriteString("usage: lockstorm COMMAND [flags]   (lockstorm COMMAND -h for its flags)\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-9s %s\n", c.name, c.summary)
	}
	b.WriteString("\nexit codes: 0 every verdict as expected, 1 a verdict differs, 2 bad input or set-up failure (nothing started), 130 interrupted")
	return b.String()
}

// errHelp ends a command that printed its help: exit 0, nothing more said.
var errHelp = &exitError{0, errors.New("")}

// parseArgs parses a subcommand's args with fs, every subcommand alike:
// flags may follow the operands (see parseMixed); -h or --help anywhere
// prints the usage line and every flag on stdout and ends the command with
// exit 0 (errHelp); a bad flag is exit 2 naming the command. It returns the
// operands.
func parseArgs(fs *flag.FlagSet, args []string, usageLine string) ([]string, error) {
	fs.SetOutput(io.Discard)
	operands, err := parseMixed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		writeHelp(os.Stdout, fs, usageLine)
		return nil, errHelp
	}
	if err != nil {
		return nil, usage("%s: %v (lockstorm %s -h for the flags)", fs.Name(), err, fs.Name())
	}
	return operands, nil
}

// writeHelp prints usageLine and fs's flags with their defaults.
func writeHelp(w io.Writer, fs *flag.FlagSet, usageLine string) {
	fmt.Fprintln(w, usageLine)
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n == 0 {
		return
	}
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// Command lockstorm runs Redis lock implementations through scenarios of
// contention and faults, checks every recorded history for mutual
// exclusion, and prints which designs survive.
//
//	lockstorm list
//	lockstorm run --scenario contention --impl set-nx-px --seed 1 [--json]
//	lockstorm check out/RUN_DIR
//	lockstorm shrink out/RUN_DIR   (the smallest scenario that still fails)
//	lockstorm baseline --impl set-nx-px --out base.json; lockstorm run --all --impl set-nx-px --baseline base.json
//	lockstorm report out
//
// Exit codes: 0 every verdict as expected, 1 a verdict differs, 2 bad
// input or setup failure, 130 interrupted.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// exitError carries an exit code out of run.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usage(format string, args ...any) error {
	return &exitError{2, fmt.Errorf(format, args...)}
}

func main() {
	// The first SIGINT or SIGTERM cancels ctx: the runs in progress stop
	// and what finished is reported. Stopping the relay then gives a second
	// signal its default action, ending lockstorm at once; its servers and
	// client processes die with it (Pdeathsig).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-sigs
		signal.Stop(sigs)
		fmt.Fprintln(os.Stderr, "\nlockstorm: interrupted: reporting what finished (interrupt again to stop at once)")
		cancel()
	}()
	err := run(ctx, os.Args[1:])
	interrupted := ctx.Err() != nil
	cancel()
	if err == nil && !interrupted {
		return
	}
	code := 2
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if interrupted {
		code = 130
	}
	if err != nil && err.Error() != "" {
		fmt.Fprintln(os.Stderr, "lockstorm:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return usage("%s", topUsage())
	}
	switch args[0] {
	case "list":
		return cmdList(os.Stdout, args[1:])
	case "run":
		return cmdRun(ctx, args[1:])
	case "check":
		return cmdCheck(args[1:])
	case "bench":
		return cmdBench(ctx, args[1:])
	case "baseline":
		return cmdBaseline(ctx, args[1:])
	case "report":
		return cmdReport(args[1:])
	case "replay":
		return cmdReplay(ctx, args[1:])
	case "shrink":
		return cmdShrink(ctx, args[1:])
	case "hunt":
		return cmdHunt(ctx, args[1:])
	case "-h", "--help", "help":
		// `lockstorm help CMD` is `lockstorm CMD -h`.
		if len(args) > 1 && args[0] == "help" {
			return run(ctx, []string{args[1], "-h"})
		}
		fmt.Println(topUsage())
		return nil
	}
	return usage("unknown command %q (want %s)", args[0], strings.Join(commandNames(), ", "))
}

// parseMixed parses args with fs allowing flags after the operands, as
// `lockstorm report DIR -o page.html` or `replay DIR --n 5` are typed: the
// flag package alone stops at the first operand and would take "-o" for a
// folder. "--" ends the flags. It returns the operands in order.
func parseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) > 0 && len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(operands, rest...), nil
		}
		i := 0
		for i < len(rest) && (rest[i] == "-" || !strings.HasPrefix(rest[i], "-")) {
			i++
		}
		operands = append(operands, rest[:i]...)
		if i == len(rest) {
			return operands, nil
		}
		args = rest[i:]
	}
}

package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
	"github.com/lockstorm/lockstorm/scenarios/spec"
)

// cmdList prints what a spec can name: the locks on trial, the embedded
// scenarios, the fault kinds and the failpoints.
func cmdList(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	operands, err := parseArgs(fs, args, "usage: lockstorm list   (the locks on trial, the embedded scenarios, the fault kinds and the failpoints)")
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return usage("list: unexpected argument %q", operands[0])
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMPLEMENTATIONS\tSOURCE\tWHAT IT DOES")
	for _, i := range lockimpl.All() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", i.Name, i.Source, i.Summary)
	}
	fmt.Fprintln(tw, "\nSCENARIOS\tMODE\tDESCRIPTION")
	for _, n := range spec.Names() {
		s, err := spec.Load(n)
		if err != nil {
			return err
		}
		mode := s.Mode
		if s.IsGated() {
			mode += ", gated"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s (impls: %s)\n", s.Name, mode, s.Description, strings.Join(s.Impls, ", "))
	}
	fmt.Fprintln(tw, "\nFAULTS\t\t")
	for _, k := range nemesis.Kinds() {
		fmt.Fprintf(tw, "%s\t\t%s\n", k, nemesis.Summary(k))
	}
	// Every point a spec's failpoints may name: spec validation accepts
	// exactly these and the command points.
	fmt.Fprintln(tw, "\nFAILPOINTS\tPOINTS (and cmd/NODE/COMMAND/before|after around each Redis command, e.g. cmd/n1/SET/after)")
	fmt.Fprintf(tw, "(runner)\t%s\n", strings.Join(spec.RunnerPoints, " "))
	for _, i := range lockimpl.All() {
		fmt.Fprintf(tw, "%s\t%s\n", i.Name, strings.Join(i.Points, " "))
	}
	return tw.Flush()
}

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

func cmdList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IMPLEMENTATIONS\tSOURCE\tWHAT IT DOES")
	for _, i := range lockimpl.All() {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", i.Name, i.Source, i.Summary)
	}
	fmt.Fprintln(tw, "\nSCENARIOS\tMODE\tDESCRIPTION")
	for _, n := range scenarios.Names() {
		s, err := scenarios.Load(n)
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
	return tw.Flush()
}

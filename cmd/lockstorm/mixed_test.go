package main

import (
	"flag"
	"io"
	"strings"
	"testing"
)

// Flags may follow the operands (`report DIR -o page.html`), "--" ends the
// flags, and a bad flag anywhere is an error.
func TestParseMixed(t *testing.T) {
	for _, tc := range []struct {
		args     string
		operands string
		o        string
		n        int
		bad      bool
	}{
		{args: "a b", operands: "a b"},
		{args: "-o x a b", operands: "a b", o: "x"},
		{args: "a -o x b", operands: "a b", o: "x"},
		{args: "a b -o x --n 3", operands: "a b", o: "x", n: 3},
		{args: "a -- -o", operands: "a -o"},
		{args: "a - b", operands: "a - b"},
		{args: "a --nope", bad: true},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o := fs.String("o", "", "")
		n := fs.Int("n", 0, "")
		got, err := parseMixed(fs, strings.Fields(tc.args))
		if (err != nil) != tc.bad {
			t.Fatalf("%q: err %v", tc.args, err)
		}
		if tc.bad {
			continue
		}
		if strings.Join(got, " ") != tc.operands || *o != tc.o || *n != tc.n {
			t.Errorf("%q: operands %q -o %q -n %d, want %q %q %d", tc.args, got, *o, *n, tc.operands, tc.o, tc.n)
		}
	}
}

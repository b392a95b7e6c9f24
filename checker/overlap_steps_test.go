package checker

import "testing"

func TestCompressSteps(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b", "c"}, "a → b → c"},
		{[]string{"a", "b", "c", "a", "b", "c", "d"}, "(a → b → c) ×2 → d"},
		{[]string{"x", "a", "a", "a"}, "x → (a) ×3"},
		{[]string{"s", "g", "s", "g", "s", "g", "del", "s"}, "(s → g) ×3 → del → s"},
	} {
		if got := compressSteps(tc.in); got != tc.want {
			t.Errorf("compressSteps(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

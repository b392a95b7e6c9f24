package locktest

// Judge is the per-run check Run makes in each subtest, exposed so a test
// can run it on a recording testing.TB and see a subtest fail.
var Judge = judge

// FilterFor and CheckSelected expose how Run selects subtests by -run and
// -skip, and runs only those.
var (
	FilterFor     = filterFor
	CheckSelected = check
)

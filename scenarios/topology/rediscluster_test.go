package topology

import (
	"reflect"
	"testing"
)

// TestClusterWatchEvents: the watcher reports a change of a node's view
// and nothing for the state it first finds (unless that is already a
// failure), nor for a state it has seen.
func TestClusterWatchEvents(t *testing.T) {
	var got []string
	cs := &clusterSet{}
	ev := func(text string) { got = append(got, text) }
	cs.events.Store(&ev)
	w := &clusterWatch{cs: cs, state: map[string]string{}}
	report := func(name string) func(old string) string {
		return func(old string) string { return name + " was " + old }
	}
	steps := []struct{ fact, now string }{
		{"n1 fail n2", "false"}, // first state: quiet
		{"n1 fail n2", "false"}, // unchanged: quiet
		{"n1 fail n2", "true"},  // reported
		{"n1 fail n2", "false"}, // reported
		{"r2 state", "fail"},    // a first state that is a failure: reported
		{"r2 role", "master "},  // first state: quiet
		{"r2 role", "slave n2"}, // reported
	}
	for _, s := range steps {
		w.change(s.fact, s.now, report(s.fact))
	}
	want := []string{"n1 fail n2 was false", "n1 fail n2 was true", "r2 state was ", "r2 role was master "}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

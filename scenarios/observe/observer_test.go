package observe

import (
	"reflect"
	"testing"

	"github.com/lockstorm/lockstorm/checker"
)

// TestUnseenKeys: a key some client acquired and no observer saw an event
// on is named; a key with an event, or never acquired, is not.
func TestUnseenKeys(t *testing.T) {
	h := checker.History{
		{Type: checker.Ok, F: checker.FAcquire, Key: "lock:0"},
		{Type: checker.Ok, F: checker.FAcquire, Key: "lock:2"},
		{Type: checker.Ok, F: checker.FAcquire, Key: "lock:1"},
		{Type: checker.Fail, F: checker.FAcquire, Key: "lock:3"},
		{Type: checker.Ok, Process: checker.ServerProcess, F: checker.FServer, Key: "lock:1", Value: "set"},
	}
	if got, want := UnseenKeys(h), []string{"lock:0", "lock:2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UnseenKeys = %v, want %v", got, want)
	}
}

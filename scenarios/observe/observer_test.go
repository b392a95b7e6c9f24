package observe

import (
	"reflect"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// TestUnseenKeys: a key some client acquired and no observer saw an event
// on is named; a key with an event, or never acquired, is not.
func TestUnseenKeys(t *testing.T) {
	h := history.History{
		{Type: history.Ok, F: history.FAcquire, Key: "lock:0"},
		{Type: history.Ok, F: history.FAcquire, Key: "lock:2"},
		{Type: history.Ok, F: history.FAcquire, Key: "lock:1"},
		{Type: history.Fail, F: history.FAcquire, Key: "lock:3"},
		{Type: history.Ok, Process: history.ServerProcess, F: history.FServer, Key: "lock:1", Value: "set"},
	}
	if got, want := UnseenKeys(h), []string{"lock:0", "lock:2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("UnseenKeys = %v, want %v", got, want)
	}
}

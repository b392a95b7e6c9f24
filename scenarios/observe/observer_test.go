package observe

import (
	"reflect"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// TestUnseenKeys: when no acquired key had an event, every acquired key is
// named; a key never acquired is not; once any acquired key was seen, the
// names match and nothing is named.
func TestUnseenKeys(t *testing.T) {
	acquires := history.History{
		{Type: history.Ok, F: history.FAcquire, Key: "lock:0"},
		{Type: history.Ok, F: history.FAcquire, Key: "lock:2"},
		{Type: history.Fail, F: history.FAcquire, Key: "lock:3"},
		{Type: history.Ok, Process: history.ServerProcess, F: history.FServer, Key: "lock:3", Value: "set"},
	}
	seen1 := append(append(history.History{}, acquires...),
		history.Op{Type: history.Ok, F: history.FAcquire, Key: "lock:1"},
		history.Op{Type: history.Ok, Process: history.ServerProcess, F: history.FServer, Key: "lock:1", Value: "set"})
	tests := []struct {
		name string
		h    history.History
		want []string
	}{
		{"none seen", acquires, []string{"lock:0", "lock:2"}},
		{"one seen", seen1, nil},
		{"nothing acquired", acquires[2:], nil},
	}
	for _, tc := range tests {
		if got := UnseenKeys(tc.h); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: UnseenKeys = %v, want %v", tc.name, got, tc.want)
		}
	}
}

package reports

import (
	"fmt"
	"testing"

	"github.com/lockstorm/lockstorm/history"
)

// The harness's own stalls and its clients' lags of 50 ms or more are drawn
// like faults; shorter ones are only counted.
func TestTimelineHarnessStalls(t *testing.T) {
	h := history.History{
		{Process: history.NemesisProcess, Client: -1, F: history.FStall, Type: history.Ok, N: 20e6, Time: 1e9},
		{Process: history.NemesisProcess, Client: -1, F: history.FStall, Type: history.Ok, N: 530e6, Time: 2.1e9},
		{Process: history.NemesisProcess, Client: 3, F: history.FStall, Type: history.Ok, N: 30e6, Time: 2.5e9},
		{Process: history.NemesisProcess, Client: 3, F: history.FStall, Type: history.Ok, N: 80e6, Time: 3e9},
	}
	got := faultWindows(h)
	want := []faultWindow{{ID: -1, Desc: "harness stalled 530 ms", From: 1.57e9, To: 2.1e9},
		{ID: -1, Desc: "c3 late 80 ms", From: 2.92e9, To: 3e9}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("windows %v, want %v", got, want)
	}
}

package history

import (
	"reflect"
	"strings"
	"sync"
	"testing"
)

// TestRecorderCodes: the codes of the compact form name the tables'
// entries, every one.
func TestRecorderCodes(t *testing.T) {
	for i, ty := range recTypes {
		if c := TypeCode(ty); int(c) != i {
			t.Errorf("type %q: code %d, want %d", ty, c, i)
		}
	}
	for i, f := range recFuncs {
		if c := funcCode(f); int(c) != i {
			t.Errorf("function %q: code %d, want %d", f, c, i)
		}
	}
	if TypeCode("weird") != noCode || funcCode("custom") != noCode {
		t.Error("a string outside the tables got a code")
	}
}

// TestRecorderKeepsEveryField: the Recorder's compact form gives back
// every field of every kind of entry (the constants it codes, strings it
// does not know, the rare fields behind their pointer), stamped with its
// index and a time that never goes back, also under concurrent Adds.
func TestRecorderKeepsEveryField(t *testing.T) {
	ops := []Op{
		{Type: Ok, Process: FinalProcess, Client: -1, F: FMeta, Meta: &Meta{Identity: Identity{Scenario: "s"}, Keys: []string{"k"}}},
		{Type: Invoke, Process: 3, Client: 3, F: FAcquire, Key: "lock:0", Value: "tok"},
		{Type: Ok, Process: 3, Client: 3, F: FAcquire, Key: "lock:0", Value: "tok", Fence: 7},
		{Type: Fail, Process: 4, Client: 4, F: FWrite, Key: "lock:0", N: 5, Fence: 6, Error: "ERR no", ErrorReply: true},
		{Type: Info, Process: 5, Client: 5, F: FRelease, Key: "lock:1", Error: "timeout"},
		{Type: Ok, Process: ServerProcess, Client: -1, F: FServer, Key: "lock:0", Value: "set", Node: "n1", Owner: "tok"},
		{Type: Ok, Process: NemesisProcess, Client: -1, F: FStart, Value: "latency", N: 2,
			Targets: &FaultTargets{Links: []string{"h0>n1"}, Clients: []int{1}}},
		{Type: Ok, Process: 6, Client: 6, F: FStep, Value: "setnx-del/after-get", Fired: []int{0, 2}},
		{Type: Ok, Process: 6, Client: 6, F: FAcquire, Key: "lock:0", Value: "tok6", Tries: []int64{5, 21, 37}},
		{Type: "weird", Process: 7, Client: 7, F: "custom", Key: "k"},
		{Type: Ok, Process: -9, Client: 1 << 40, F: FExtend, N: -3, Value: "v"},
		{Type: Info, Process: 9, Client: 9, F: FRead, Key: "lock:2", Value: "tok2", Error: "i/o timeout"},
		// Strings that fill a block, cross into the next, or are too long
		// for their length field.
		{Type: Ok, Process: 8, Client: 8, F: FAcquire, Key: "k", Value: strings.Repeat("v", 40000), Error: "e"},
		{Type: Ok, Process: 8, Client: 8, F: FAcquire, Key: "k2", Value: strings.Repeat("w", 40000)},
		{Type: Ok, Process: 8, Client: 8, F: FAcquire, Key: "k3", Value: strings.Repeat("x", 70000)},
		{Type: Ok, Process: 8, Client: 8, F: FAcquire, Key: "k4", Value: strings.Repeat("y", recorderBytes+1)[:60000], Error: strings.Repeat("z", 10000)},
		{},
	}
	rec := NewRecorder()
	for i, op := range ops {
		got := rec.Add(op)
		if got.Index != i || got.Time < 0 {
			t.Fatalf("Add %d stamped index %d time %d", i, got.Index, got.Time)
		}
	}
	h := rec.End(Op{Type: Ok, Process: FinalProcess, Client: -1, F: FEnd})
	if len(h) != len(ops)+1 || h[len(ops)].F != FEnd {
		t.Fatalf("history of %d entries, last %+v", len(h), h[len(h)-1])
	}
	for i, want := range ops {
		got := h[i]
		if got.Index != i || i > 0 && got.Time < h[i-1].Time {
			t.Errorf("entry %d: index %d, time %d after %d", i, got.Index, got.Time, h[max(i-1, 0)].Time)
		}
		want.Index, want.Time = got.Index, got.Time
		if !reflect.DeepEqual(got, want) {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got, want)
		}
	}
	if rec.Add(ops[1]); len(rec.History()) != len(h) {
		t.Error("an Add after End was recorded")
	}

	rec = NewRecorder()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 * recorderChunk / 8 {
				rec.Add(ops[1+g%len(ops[1:])])
			}
		}()
	}
	wg.Wait()
	h = rec.History()
	for i := range h {
		if h[i].Index != i || i > 0 && h[i].Time < h[i-1].Time {
			t.Fatalf("entry %d: index %d, time %d after %d", i, h[i].Index, h[i].Time, h[i-1].Time)
		}
	}
}

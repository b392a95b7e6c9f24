package observe

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
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

// TestOwnersOfPipelinedSets: an observer's reads go out in batches, so a
// set's read may run after later sets on the same key. Whatever the
// batching, a set's owner is the value that set wrote or unknown, never
// another set's; the last set on a key (nothing after it) is known; every
// set is recorded. Writers send their sets one at a time and pipelined
// (several sets on one key executed before the observer can read).
func TestOwnersOfPipelinedSets(t *testing.T) {
	srv := cluster.StartForTest(t, 1)
	cases := []struct {
		name        string
		keys, batch int
		rounds      int
		writers     int // writer w sets the keys i with i mod writers = w
	}{
		{name: "one at a time", keys: 4, batch: 1, rounds: 300, writers: 1},
		{name: "pipelined on one key", keys: 1, batch: 20, rounds: 30, writers: 1},
		{name: "pipelined, concurrent writers", keys: 8, batch: 8, rounds: 60, writers: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			keys := make([]string, tc.keys)
			for i := range keys {
				keys[i] = fmt.Sprintf("owners:%s:%d", strings.ReplaceAll(tc.name, " ", "-"), i)
			}
			rec := history.NewRecorder()
			obs, err := Start(ctx, srv.Nodes(), keys, nil, rec, 0)
			if err != nil {
				t.Fatal(err)
			}
			// written[key] is the values set on key, in the server's order:
			// each writer owns its keys, so its order is the server's.
			written := make([]map[string][]string, tc.writers)
			var wg sync.WaitGroup
			for w := 0; w < tc.writers; w++ {
				written[w] = map[string][]string{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					rdb := redis.NewClient(&redis.Options{Addr: srv.Nodes()[0].Addr, Protocol: 2, DisableIdentity: true})
					defer rdb.Close()
					for r := 0; r < tc.rounds; r++ {
						key := keys[(w+r*tc.writers)%len(keys)]
						p := rdb.Pipeline()
						for b := 0; b < tc.batch; b++ {
							v := fmt.Sprintf("w%d-r%d-b%d", w, r, b)
							p.Set(ctx, key, v, 0)
							written[w][key] = append(written[w][key], v)
						}
						if _, err := p.Exec(ctx); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			CloseAll(obs)
			got := map[string][]string{} // key → owners of its set events, in order
			for _, op := range rec.History() {
				if op.F == history.FServer && op.Value == "set" {
					got[op.Key] = append(got[op.Key], op.Owner)
				}
			}
			want := map[string][]string{}
			for _, m := range written {
				for k, vs := range m {
					want[k] = append(want[k], vs...)
				}
			}
			for k, vs := range want {
				owners := got[k]
				if len(owners) != len(vs) {
					t.Fatalf("%s: %d set events recorded, %d sets made", k, len(owners), len(vs))
				}
				for i, o := range owners {
					if o != "" && o != vs[i] {
						t.Fatalf("%s: set %d wrote %q, recorded owner %q", k, i, vs[i], o)
					}
				}
				if last := owners[len(owners)-1]; last != vs[len(vs)-1] {
					t.Errorf("%s: last set wrote %q, recorded owner %q", k, vs[len(vs)-1], last)
				}
			}
		})
	}
}

// TestReconnectAfterRestart: a node restarted under its observer (a crash,
// a restart fault) leaves a gap event on every watched key, at the moment
// the connection ended and before anything after the restart; the
// observer subscribes again, so a set after the restart is recorded with
// its owner and syncs resume. Without the reconnect nothing after the
// restart is recorded at all; without the gap the restart's silent
// emptying of the node would read as the key still standing.
func TestReconnectAfterRestart(t *testing.T) {
	srv := cluster.StartForTest(t, 1)
	ctx := context.Background()
	keys := []string{"gap:0", "gap:1"}
	rec := history.NewRecorder()
	obs, err := Start(ctx, srv.Nodes(), keys, nil, rec, 0)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	closeObs := func() { once.Do(func() { CloseAll(obs) }) }
	defer closeObs()
	set := func(v string) {
		t.Helper()
		rdb := redis.NewClient(&redis.Options{Addr: srv.Nodes()[0].Addr, Protocol: 2, DisableIdentity: true, MaxRetries: -1})
		defer rdb.Close()
		var err error
		for i := 0; i < 100; i++ { // the restarted server may not listen yet
			if err = rdb.Set(ctx, "gap:0", v, 0).Err(); err == nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal(err)
	}
	set("before")
	time.Sleep(100 * time.Millisecond)
	if err := srv.Restart(0); err != nil {
		t.Fatal(err)
	}
	restarted := rec.Now()
	// The observer dials every reconnectEvery; the set must come after its
	// subscription to be seen, so wait for a sync after the restart first.
	deadline := time.Now().Add(5 * time.Second)
	for !syncAfter(rec.History(), restarted) {
		if time.Now().After(deadline) {
			t.Fatal("no sync recorded after the restart: the observer did not reconnect")
		}
		time.Sleep(20 * time.Millisecond)
	}
	set("after")
	time.Sleep(100 * time.Millisecond)
	closeObs()
	var seq []string
	gaps := map[string]int{}
	for _, op := range rec.History() {
		if op.F != history.FServer {
			continue
		}
		if op.Value == history.GapEvent {
			gaps[op.Key]++
			if op.Time > restarted {
				t.Errorf("%s: gap recorded at %d, after the restart returned (%d)", op.Key, op.Time, restarted)
			}
		}
		if op.Key == "gap:0" {
			seq = append(seq, op.Value+"="+op.Owner)
		}
	}
	if gaps["gap:0"] != 1 || gaps["gap:1"] != 1 {
		t.Errorf("gap events per key: %v, want one on each watched key", gaps)
	}
	if want := []string{"set=before", "gap=", "set=after"}; !reflect.DeepEqual(seq, want) {
		t.Errorf("gap:0's events: %v, want %v", seq, want)
	}
}

// syncAfter says h has a sync sent after t.
func syncAfter(h history.History, t int64) bool {
	for _, op := range h {
		if op.F == history.FSync && op.N > t {
			return true
		}
	}
	return false
}

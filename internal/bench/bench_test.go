package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/history"
	"github.com/lockstorm/lockstorm/internal/cluster"
	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// TestSmoke runs the check rows at 10k operations and the recorder rows,
// and checks the table's and the JSON's structure. It needs no Redis and
// takes a few seconds.
func TestSmoke(t *testing.T) {
	rep := NewReport(true)
	rep.Rows = append(rep.Rows, CheckRate(CheckConfig{Sizes: []int{10_000}})...)
	rep.Rows = append(rep.Rows, SuiteNotRun()...)
	rep.Rows = append(rep.Rows, RecorderCost(200_000)...)
	if len(rep.Rows) != 4+2+3 {
		t.Fatalf("%d rows, want 9", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.Row == "" || r.Name == "" || r.Measure == "" || r.Status == "" {
			t.Errorf("row %+v lacks a label, name, measure or status", r)
		}
		switch r.Status {
		case Met, Missed, Info, NotRun:
		default:
			t.Errorf("row %s: status %q (%s)", r.Row, r.Status, r.Note)
		}
		if strings.HasPrefix(r.Name, "check/") {
			if r.Figure <= 0 || r.Extra["peak_heap_mb"] <= 0 {
				t.Errorf("row %s: figure %v, peak %v", r.Row, r.Figure, r.Extra["peak_heap_mb"])
			}
			if r.Reference <= 0 { // raw porcupine runs at 10k
				t.Errorf("row %s: no raw porcupine reference: %s", r.Row, r.RefText)
			}
		}
	}
	var tab bytes.Buffer
	if err := WriteTable(&tab, rep); err != nil {
		t.Fatal(err)
	}
	out := tab.String()
	for _, want := range append([]string{"2a", "2d", "4a", "5a", "5c", "not run (use --suite)", "raw porcupine"}, TableHeader...) {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, rep); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Rows) != len(rep.Rows) {
		t.Fatalf("JSON has %d rows, want %d", len(back.Rows), len(rep.Rows))
	}
	for _, r := range back.Rows {
		for _, k := range []string{"name", "figure", "unit", "reference", "ratio", "met", "status"} {
			if _, ok := r[k]; !ok {
				t.Errorf("JSON row %v lacks %q", r["name"], k)
			}
		}
	}
}

func TestParseRPS(t *testing.T) {
	out := []byte("SET: rps=0.0 (overall: -nan) avg_msec=-nan\r SET: rps=91358.6 (overall: 91358.6)\r" +
		"SET __rand_int__ x NX PX 10000: 98425.20 requests per second, p50=0.319 msec\n")
	got, err := ParseRPS(out)
	if err != nil || got != 98425.20 {
		t.Fatalf("ParseRPS = %v, %v", got, err)
	}
	if _, err := ParseRPS([]byte("ERR")); err == nil {
		t.Fatal("no figure: no error")
	}
}

func TestDriveSpecParses(t *testing.T) {
	if _, err := DriveRunner(context.Background(), "no-such-impl", 1, 1, time.Second); err == nil {
		t.Fatal("unknown impl accepted")
	}
}

// benchDrive runs b.N lock cycles of set-nx-px spread over 64 clients on
// 64 keys, each client on addr(i). Run with a short benchtime, e.g.
// go test -run - -bench Drive -benchtime 20000x ./scenarios/bench/
func benchDrive(b *testing.B, addr func(i int) string) {
	const clients = 64
	ctx := context.Background()
	addrs := make([]string, clients)
	for i := range addrs {
		addrs[i] = addr(i)
	}
	lockers, closeAll, err := driveLockers(ctx, "set-nx-px", addrs)
	b.Cleanup(closeAll)
	if err != nil {
		b.Fatal(err)
	}
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "bench:lock:" + strconv.Itoa(i)
			for left.Add(-1) >= 0 {
				lease, err := l.Acquire(ctx, key)
				if err == nil {
					err = l.Release(ctx, lease)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "cycles/s")
}

// BenchmarkDriveDirect: set-nx-px cycles, 64 clients, direct connections
// to a real redis-server.
func BenchmarkDriveDirect(b *testing.B) {
	if testing.Short() {
		b.Skip("needs redis-server")
	}
	s := cluster.StartForTest(b, 1)
	addr := s.Nodes()[0].Addr
	benchDrive(b, func(int) string { return addr })
}

// BenchmarkDriveProxied: the same through one toxiproxy link per client.
func BenchmarkDriveProxied(b *testing.B) {
	if testing.Short() {
		b.Skip("needs redis-server")
	}
	s := cluster.StartForTest(b, 1)
	nw := nemesis.NewNetwork()
	b.Cleanup(nw.Close)
	var addrs []string
	for i := 0; i < 64; i++ {
		l, err := nw.AddLink("h"+strconv.Itoa(i+1), "n1", s.Nodes()[0].Addr)
		if err != nil {
			b.Fatal(err)
		}
		addrs = append(addrs, l.Addr)
	}
	benchDrive(b, func(i int) string { return addrs[i] })
}

// BenchmarkRecorderAdd: one entry into a recorder, bytes and allocations
// per op included (the compact entry kept and its chunk's growth).
func BenchmarkRecorderAdd(b *testing.B) {
	rec := history.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		rec.Add(sampleOp)
	}
}

// BenchmarkRecorderAddParallel: the same from GOMAXPROCS×16 goroutines.
func BenchmarkRecorderAddParallel(b *testing.B) {
	rec := history.NewRecorder()
	b.ReportAllocs()
	b.SetParallelism(16)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			rec.Add(sampleOp)
		}
	})
}

// BenchmarkFailpointUnattached: Failpoints.Hit on a hub nothing armed.
func BenchmarkFailpointUnattached(b *testing.B) {
	fp := lockimpl.NewFailpoints(lockimpl.NewHub(), 0)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = fp.Hit(ctx, "set-nx-px/before-set")
	}
}

package zootest

import (
	"fmt"
	"testing"
)

// TestShard reads the slice from the environment a user or an Indexed
// Job sets, and refuses half a setting rather than run the whole zoo on
// every pod.
func TestShard(t *testing.T) {
	cases := []struct {
		name                 string
		shard, index, shards string
		k, n                 int
		wantErr              bool
	}{
		{"nothing: the whole zoo", "", "", "", 0, 1, false},
		{"K/N", "2/3", "", "", 2, 3, false},
		{"indexed job", "", "3", "4", 3, 4, false},
		{"K/N wins over the index", "1/2", "5", "8", 1, 2, false},
		{"index without N", "", "1", "", 0, 0, true},
		{"N without index", "", "", "4", 0, 0, true},
		{"K past N", "4/4", "", "", 0, 0, true},
		{"negative", "-1/4", "", "", 0, 0, true},
		{"not numbers", "a/b", "", "", 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("LOCKSTORM_ZOO_SHARD", c.shard)
			t.Setenv("JOB_COMPLETION_INDEX", c.index)
			t.Setenv("LOCKSTORM_ZOO_SHARDS", c.shards)
			k, n, err := Shard()
			if (err != nil) != c.wantErr || !c.wantErr && (k != c.k || n != c.n) {
				t.Fatalf("Shard() = %d, %d, %v; want %d, %d, error %v", k, n, err, c.k, c.n, c.wantErr)
			}
		})
	}
}

// TestInShard: for every N up to 8, each lock of the zoo (and some made
// up) is in exactly one of the N slices, and with N = 1 in the only one.
func TestInShard(t *testing.T) {
	names := []string{"redsync@v4.0.3", "redsync-5@v4.0.3", "redislock@v0.10.0", "rueidislock@v1.0.79",
		"warlock@1.0.2", "redis-py@4.3.4", "symfony-lock-5@5.4.23", "laravel-lock@8.83.26"}
	for i := range 40 {
		names = append(names, fmt.Sprintf("lock-%d@v1", i))
	}
	for n := 1; n <= 8; n++ {
		per := make([]int, n)
		for _, name := range names {
			in := 0
			for k := range n {
				if InShard(name, k, n) {
					in++
					per[k]++
				}
			}
			if in != 1 {
				t.Fatalf("%s is in %d of %d slices, want 1", name, in, n)
			}
		}
		if n <= 4 {
			for k, c := range per {
				if c == 0 {
					t.Errorf("N=%d: slice %d has no lock of %d", n, k, len(names))
				}
			}
		}
	}
}

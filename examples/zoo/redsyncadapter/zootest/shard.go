package zootest

import (
	"fmt"
	"hash/fnv"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Shard is which slice of the zoo's locks this process runs: K of N
// (0-based), from LOCKSTORM_ZOO_SHARD=K/N, or a Kubernetes Indexed Job's
// JOB_COMPLETION_INDEX=K with LOCKSTORM_ZOO_SHARDS=N (deploy/zoo). None
// set: the whole zoo (0 of 1). A lock belongs to one slice by its name,
// not by its module, so the npm module's fourteen locks spread over the
// machines instead of making one slice the whole hour; each slice is the
// same on every machine whatever modules it compiles.
func Shard() (k, n int, err error) {
	v := os.Getenv("LOCKSTORM_ZOO_SHARD")
	if v == "" {
		idx, ns := os.Getenv("JOB_COMPLETION_INDEX"), os.Getenv("LOCKSTORM_ZOO_SHARDS")
		switch {
		case idx == "" && ns == "":
			return 0, 1, nil
		case idx == "" || ns == "":
			// Half a shard is an error, never the whole zoo on every pod.
			return 0, 0, fmt.Errorf("JOB_COMPLETION_INDEX=%q and LOCKSTORM_ZOO_SHARDS=%q: set both, or LOCKSTORM_ZOO_SHARD=K/N", idx, ns)
		}
		v = idx + "/" + ns
	}
	ks, ns, ok := strings.Cut(v, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 0 || k >= n {
		return 0, 0, fmt.Errorf("zoo shard %q: want K/N with 0 <= K < N (K is 0-based)", v)
	}
	return k, n, nil
}

// InShard says whether the lock named name is slice k's of n: the
// name's FNV-1a hash modulo n, so the slices are disjoint, cover every
// lock, and need no list of all locks in any one module.
func InShard(name string, k, n int) bool {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int(h.Sum32()%uint32(n)) == k
}

// SkipUnlessMine skips t when the lock named name belongs to another
// slice of the zoo (Shard), and fails it on a malformed shard setting.
func SkipUnlessMine(t *testing.T, name string) {
	t.Helper()
	k, n, err := Shard()
	if err != nil {
		t.Fatal(err)
	}
	if !InShard(name, k, n) {
		t.Skipf("%s: another machine's (zoo shard %d/%d runs the others)", name, k, n)
	}
}

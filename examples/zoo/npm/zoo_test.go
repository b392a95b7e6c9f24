// Package npm puts the npm lock libraries of package.json (several
// versions of one package through npm aliases) on trial, each as a client
// process (protocol.js, examples/clients/PROTOCOL.md). `make zoo-clients`
// installs them (npm ci).
package npm

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
	"github.com/lockstorm/lockstorm/lockimpl"
	lockexec "github.com/lockstorm/lockstorm/lockimpl/exec"
)

// battery is the zoo's battery less the Redis Cluster scenarios: a client
// process is told its nodes' addresses, and a cluster node has none to
// tell (lockexec.New refuses it), so each of those runs ends in an error
// that stops the whole battery.
func battery() []string {
	var names []string
	for _, n := range zootest.Battery() {
		if !strings.HasPrefix(n, "cluster-") {
			names = append(names, n)
		}
	}
	return names
}

// clients are the client processes, each with the package and version
// the matrix names (the version its hello reports is checked against it).
var clients = []struct {
	library, version string
	argv             []string
}{
	{"redlock", "v5.0.0-beta.2", []string{"node", "redlock-v5.js", "redlock-5.0.0-beta.2"}},
	{"redlock", "v5.0.0-beta.2", []string{"node", "redlock-v5.js", "redlock-5.0.0-beta.2", "5"}},
	{"redlock", "4.2.0", []string{"node", "redlock-v4.js"}},
	{"redlock", "4.2.0", []string{"node", "redlock-v4.js", "5"}},
	{"@sesamecare-oss/redlock", "1.4.0", []string{"node", "redlock-v5.js", "@sesamecare-oss/redlock"}},
	{"@sesamecare-oss/redlock", "1.4.0", []string{"node", "redlock-v5.js", "@sesamecare-oss/redlock", "5"}},
	{"redis-semaphore Mutex", "5.8.0", []string{"node", "redis-semaphore.js", "mutex"}},
	{"redis-semaphore RedlockMutex", "5.8.0", []string{"node", "redis-semaphore.js", "redlock", "5"}},
	{"ioredis-lock", "4.0.0", []string{"node", "ioredis-lock.js"}},
	{"redis-lock", "1.0.0", []string{"node", "redis-lock.js"}},
	{"simple-redis-mutex", "3.0.0", []string{"node", "simple-redis-mutex.js"}},
	{"redlock-universal SimpleLock", "0.8.5", []string{"node", "redlock-universal.js"}},
	{"redlock-universal RedLock", "0.8.5", []string{"node", "redlock-universal.js", "5"}},
	{"node-redis-warlock", "1.0.2", []string{"node", "warlock.js"}},
}

// grantChecked are the clients whose library checks, after its try, that
// the lease it dated before the try has not run out, by the wall clock
// (Date.now(): grant_checked, never grant_monotonic here); the others
// grant whatever the time. The lines are in each client's header.
var grantChecked = map[string]bool{
	"redlock@4.2.0":             true, // redlock.js 397, 419
	"redlock-5@4.2.0":           true,
	"redlock-universal-5@0.8.5": true, // dist/index.cjs 1172, 1193-1196
}

// extendChecked are the clients whose library tells a validity dated
// from before the command that took or extended the key (expiration =
// start + ttl - drift, start taken before the commands: redlock.js
// 294-307, 397-419; dist/cjs/index.js 210-217, 246-262 at 5.0.0-beta.2;
// build/index.js 146-156, 185-200 in the fork). redlock-universal's
// RedLock is not among them though it is a quorum lock: its handle's
// acquiredAt is taken after the grant and its ttl is the configured one
// (dist/index.cjs 1136-1142), and extend returns a bare boolean after
// GETs and compare-and-pexpires on every node, with no time taken at all
// (1271-1301).
var extendChecked = map[string]bool{
	"redlock@v5.0.0-beta.2":      true,
	"redlock-5@v5.0.0-beta.2":    true,
	"redlock@4.2.0":              true,
	"redlock-5@4.2.0":            true,
	"sesamecare-redlock@1.4.0":   true,
	"sesamecare-redlock-5@1.4.0": true,
}

// renewalEvery are the clients that renew, each with the share of its TTL
// after which it does (redis-semaphore: lib/Lock.js 45, 48).
var renewalEvery = map[string]float64{
	"redis-semaphore@5.8.0":           0.8,
	"redis-semaphore-redlock-5@5.8.0": 0.8,
}

// TestZoo runs the battery against every client under LOCKSTORM_ZOO=1
// (make zoo); without it, each client's hello is checked (installed, and
// at the version the matrix names).
func TestZoo(t *testing.T) {
	seeds := installed(t)
	for _, c := range clients {
		info := describe(t, c.argv)
		t.Run(info.Name, func(t *testing.T) {
			if !zootest.NamesVersion(info.Name, c.version) {
				t.Fatalf("%s: its hello names another version than %s", info.Name, c.version)
			}
			if c := info.Claims; c.RenewalEvery != renewalEvery[info.Name] {
				t.Errorf("%s: renewal_every %v, want %v", info.Name, c.RenewalEvery, renewalEvery[info.Name])
			}
			if c := info.Claims; c.GrantChecked != grantChecked[info.Name] || c.GrantMonotonic {
				t.Errorf("%s: grant_checked %v grant_monotonic %v, want %v false", info.Name, c.GrantChecked, c.GrantMonotonic, grantChecked[info.Name])
			}
			if c := info.Claims; c.ExtendChecked != extendChecked[info.Name] {
				t.Errorf("%s: extend_checked %v, want %v", info.Name, c.ExtendChecked, extendChecked[info.Name])
			}
			if os.Getenv("LOCKSTORM_ZOO") == "" {
				return
			}
			zootest.SkipUnlessMine(t, info.Name)
			reps := zootest.Run(t, info, seeds, battery())
			zootest.Write(t, c.library, c.version, info, reps)
		})
	}
}

// installed fails the test when the packages are not installed, and
// returns the zoo's seeds.
func installed(t *testing.T) []uint64 {
	t.Helper()
	if _, err := os.Stat("node_modules"); err != nil {
		t.Fatalf("node_modules missing: run make zoo-clients (npm ci): %v", err)
	}
	seeds, err := zootest.Seeds()
	if err != nil {
		t.Fatal(err)
	}
	return seeds
}

// describe is the lock a client process says it is (its hello).
func describe(t *testing.T, argv []string) lockimpl.Info {
	t.Helper()
	info, err := lockexec.Describe(context.Background(), argv)
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	return info
}

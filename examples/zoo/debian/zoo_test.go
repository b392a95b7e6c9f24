// Package debian puts the lock libraries Debian packages for PHP and
// Python on trial, each as a client process (examples/clients/PROTOCOL.md):
// redis-py's redis.lock.Lock (python3-redis, run by Debian's
// /usr/bin/python3), Symfony Lock (php-symfony-lock, php-redis) and
// Laravel's cache lock (php-illuminate-cache, php-illuminate-redis). `make
// clients` installs them (apt-get).
package debian

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
	"github.com/lockstorm/lockstorm/lockimpl"
	lockexec "github.com/lockstorm/lockstorm/lockimpl/exec"
)

// battery is the zoo's battery less the Redis Cluster scenarios: a client
// process is told its nodes' addresses, and a cluster node has none to
// tell (lockexec.New refuses it).
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
// the matrix names (the version its hello reports is checked against it:
// Debian's packages, bookworm's).
var clients = []struct {
	library, version string
	argv             []string
}{
	{"redis-py Lock", "4.3.4", []string{"/usr/bin/python3", "redis_py.py", "extend"}},
	{"redis-py Lock", "4.3.4", []string{"/usr/bin/python3", "redis_py.py", "reacquire"}},
	{"symfony/lock RedisStore", "5.4.23", []string{"php", "symfony_lock.php"}},
	{"symfony/lock CombinedStore", "5.4.23", []string{"php", "symfony_lock.php", "5"}},
	{"Laravel Cache::lock (illuminate/cache)", "8.83.26", []string{"php", "laravel_lock.php"}},
}

// extendChecked are the clients whose library dates an extended lease
// from before the extend's command and refuses a yes that came back past
// it: Symfony Lock (RedisStore.php 183-188, Lock.php 204-215,
// CombinedStore.php 140-162; the lines in symfony_lock.php's header).
// redis-py's extend and reacquire return a bare True and tell no validity
// (lock.py 261-288, 290-308), and Laravel's lock cannot extend.
var extendChecked = map[string]bool{
	"symfony-lock@5.4.23":   true,
	"symfony-lock-5@5.4.23": true,
}

// TestZoo runs the battery against every client under LOCKSTORM_ZOO=1
// (make zoo); without it, each client's hello is checked (installed, and
// at the version the matrix names).
func TestZoo(t *testing.T) {
	seeds, err := zootest.Seeds()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		if _, err := exec.LookPath(c.argv[0]); err != nil {
			t.Fatalf("%s: %v: run make clients", c.library, err)
		}
		info := describe(t, c.argv)
		t.Run(info.Name, func(t *testing.T) {
			if !zootest.NamesVersion(info.Name, c.version) {
				t.Fatalf("%s: its hello names another version than %s", info.Name, c.version)
			}
			// Symfony's acquire is save then refresh: a grant checked by
			// the client's clock and confirmed on the server.
			if cl := info.Claims; strings.HasPrefix(info.Name, "symfony-lock") && !(cl.GrantChecked && cl.GrantConfirmed) {
				t.Fatalf("%s: claims %+v, want grant_checked and grant_confirmed", info.Name, cl)
			}
			if cl := info.Claims; cl.ExtendChecked != extendChecked[info.Name] {
				t.Fatalf("%s: extend_checked %v, want %v", info.Name, cl.ExtendChecked, extendChecked[info.Name])
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

// describe is the lock a client process says it is (its hello).
func describe(t *testing.T, argv []string) lockimpl.Info {
	t.Helper()
	info, err := lockexec.Describe(context.Background(), argv)
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	return info
}

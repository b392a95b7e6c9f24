// Package zoo is rueidis's rueidislock v1.0.79 on trial, as a client
// process (client/, a Go program speaking examples/clients/PROTOCOL.md):
// see client/main.go for why a process and for the claims.
package zoo

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockstorm/lockstorm/examples/zoo/redsyncadapter/zootest"
	lockexec "github.com/lockstorm/lockstorm/lockimpl/exec"
)

// version is the release go.mod pins; the client's hello must name it.
const version = "v1.0.79"

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

// client builds the client program with this module's go.mod (the test
// binary cannot be it: the harness starts one process per client).
func client(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "rueidislock-client")
	if out, err := exec.Command(gobin, "build", "-o", bin, "./client").CombinedOutput(); err != nil {
		t.Fatalf("go build ./client: %v\n%s", err, out)
	}
	return bin
}

// TestZoo runs the battery under LOCKSTORM_ZOO=1 (make zoo); without it,
// the client's hello is checked: it starts and names the version the
// matrix says.
func TestZoo(t *testing.T) {
	seeds, err := zootest.Seeds()
	if err != nil {
		t.Fatal(err)
	}
	info, err := lockexec.Describe(context.Background(), []string{client(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Run(info.Name, func(t *testing.T) {
		if !zootest.NamesVersion(info.Name, version) {
			t.Fatalf("%s: its hello names another version than %s", info.Name, version)
		}
		if c := info.Claims; c.Topology != "single" || c.Expiry != "server" || !c.Renewal || !c.GrantChecked || !c.GrantMonotonic {
			t.Fatalf("%s: claims %+v, want single, server expiry, renewal, a grant checked by a monotonic clock", info.Name, c)
		}
		if os.Getenv("LOCKSTORM_ZOO") == "" {
			return
		}
		zootest.SkipUnlessMine(t, info.Name)
		reps := zootest.Run(t, info, seeds, battery())
		zootest.Write(t, "rueidis rueidislock", version, info, reps)
	})
}

package exec

import (
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPHPConnectTimeout: the PHP clients' connection (lockstorm_connect in
// examples/clients/lockstorm_client.php) waits for a reply as long as the
// scenario's node timeout or command timeout when it is over 1 s, as a
// scaled run's options are: a node that never answers fails a command
// after LOCKSTORM_NODE_TIMEOUT_MS or LOCKSTORM_COMMAND_TIMEOUT_MS, not
// after a fixed 1 s; 1 s when the scenario sets neither.
func TestPHPConnectTimeout(t *testing.T) {
	needRuntime(t, "php", "-r", `exit(class_exists("Redis") ? 0 : 1);`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // a node that reads and never replies
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = c.Read(make([]byte, 1024)); time.Sleep(10 * time.Second) }()
		}
	}()
	code := `require getenv("CLIENT"); $r = lockstorm_connect(0); $t = microtime(true);
		try { $r->get("k"); } catch (Exception $e) {} printf("%.3f", microtime(true) - $t);`
	for _, tc := range []struct {
		nodeTimeout, commandTimeout string
		min, max                    float64
	}{{"", "", 0.9, 1.9}, {"2500", "", 2.4, 4.0}, {"", "2500", 2.4, 4.0}, {"50", "1000", 0.9, 1.9}} {
		cmd := exec.Command("php", "-r", code)
		cmd.Env = append(os.Environ(), "CLIENT="+example("lockstorm_client.php"), "LOCKSTORM_NODES="+ln.Addr().String(),
			"LOCKSTORM_NODE_TIMEOUT_MS="+tc.nodeTimeout, "LOCKSTORM_COMMAND_TIMEOUT_MS="+tc.commandTimeout)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("php: %v\n%s", err, out)
		}
		waited, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil {
			t.Fatalf("php printed %q", out)
		}
		if waited < tc.min || waited > tc.max {
			t.Errorf("node timeout %q, command timeout %q: a silent node failed the command after %.3f s, want %.1f-%.1f s",
				tc.nodeTimeout, tc.commandTimeout, waited, tc.min, tc.max)
		}
	}
}

package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// forkingWrapper writes a shell script that runs redis-server as its child
// (not exec), as a careless wrapper would: killing the script's pid alone
// leaves that child serving.
func forkingWrapper(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server is required under CI=true: %v", err)
		}
		t.Skip("redis-server not installed")
	}
	path := filepath.Join(t.TempDir(), "redis-wrapper.sh")
	script := "#!/bin/sh\n" + bin + " \"$@\" &\nwait\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestStopKillsProcessGroup: whatever a server forks dies with it, on Close
// and on the Kill fault (SIGKILL to the group, at once), and a
// restart through the wrapper serves again.
func TestStopKillsProcessGroup(t *testing.T) {
	wrapper := forkingWrapper(t)
	for _, tc := range []struct {
		name string
		stop func(s *Servers) error
	}{
		{"close", func(s *Servers) error { return s.Close() }},
		{"kill", func(s *Servers) error { return s.Kill(0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := StartForTestWith(t, Options{Nodes: 1, Server: wrapper})
			pgid := s.Procs()[0].Pid()
			// The test means something only if the wrapper did fork: the
			// group holds the shell and redis-server.
			if m := GroupMembers(pgid); len(m) < 2 {
				t.Fatalf("group %d has %v, want the wrapper and its redis-server child", pgid, m)
			}
			if err := ping(s.Procs()[0].Addr); err != nil {
				t.Fatal(err)
			}
			if err := tc.stop(s); err != nil {
				t.Fatal(err)
			}
			if m := GroupMembers(pgid); len(m) > 0 {
				t.Fatalf("after %s, processes %v of group %d remain", tc.name, m, pgid)
			}
			if err := ping(s.Procs()[0].Addr); err == nil {
				t.Fatalf("after %s, %s still answers", tc.name, s.Procs()[0].Addr)
			}
			if tc.name == "kill" {
				if err := s.Restart(0); err != nil {
					t.Fatal(err)
				}
				if err := ping(s.Procs()[0].Addr); err != nil {
					t.Fatalf("after restart: %v", err)
				}
			}
		})
	}
}

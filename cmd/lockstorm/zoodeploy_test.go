package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestZooDeploy checks deploy/zoo without docker or a cluster (neither is
// on CI's machine): the image installs with the very Makefile targets
// `make test` installs with, and the Indexed Job's pods, their command run
// by sh as Kubernetes would with each JOB_COMPLETION_INDEX, ask `make zoo`
// for N distinct slices 0..N-1 of N, into folders the report Job merges.
// That every lock lands in exactly one slice is zootest's TestInShard.
func TestZooDeploy(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^test: (.*)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile: no test: rule")
	}
	docker, err := os.ReadFile("../../deploy/zoo/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	run := regexp.MustCompile(`(?m)make ([a-z0-9 -]+)\\?$`).FindSubmatch(docker)
	if run == nil {
		t.Fatal("Dockerfile: no RUN make ... line")
	}
	installs := strings.Fields(string(run[1]))
	for _, p := range strings.Fields(string(m[1])) {
		if p != "vet" && p != "$(SHIM)" && !slices.Contains(installs, p) {
			t.Errorf("make test installs with %q, the Dockerfile's make does not (%v)", p, installs)
		}
	}

	b, err := os.ReadFile("../../deploy/zoo/job.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var job k8sJob
	if err := yaml.Unmarshal(b, &job); err != nil {
		t.Fatal(err)
	}
	c := job.Spec.Template.Spec.Containers[0]
	env := []string{}
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	if job.Spec.CompletionMode != "Indexed" || !slices.Contains(env, fmt.Sprintf("ZOO_SHARDS=%d", job.Spec.Completions)) {
		t.Fatalf("not an indexed job over ZOO_SHARDS=completions: %+v, env %v", job.Spec, env)
	}
	// A make that prints its arguments stands in for the real one.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "make"), []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range job.Spec.Completions {
		cmd := exec.Command("sh", "-c", c.Args[0])
		cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin", fmt.Sprint("JOB_COMPLETION_INDEX=", i)}, env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pod %d: %v: %s", i, err, out)
		}
		want := fmt.Sprintf("zoo ZOO_SHARD=%d/%d ZOO_SEEDS=1,2,3 ZOO_OUT=/results/zoo-%d", i, job.Spec.Completions, i)
		if got := strings.TrimSpace(string(out)); got != want || seen[got] {
			t.Fatalf("pod %d runs %q, want %q once", i, got, want)
		}
		seen[want] = true
	}
	report, err := os.ReadFile("../../deploy/zoo/report.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(report), "/results/zoo-*/*/") || !strings.Contains(string(report), "--zoo /results/zoo.html") {
		t.Fatal("report.yaml does not merge the pods' /results/zoo-K folders into the zoo page")
	}
}

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// small replaces the example sweeps' "--all --seeds 8" in the test: the
// same commands on one scheduled scenario (four locks, one job a shard).
const small = "--scenario foreign-unlock --seed 11 --backend redis-server"

// TestSweepExamples parses the shipped sweep configurations (a Kubernetes
// Indexed Job, a CI matrix) and runs their shard and merge commands
// locally, as their engines would: four shards, then one report over them.
func TestSweepExamples(t *testing.T) {
	cluster.StartForTest(t, 1)
	bin := buildBinary(t)
	pathDir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(pathDir, "lockstorm")); err != nil {
		t.Fatal(err)
	}
	sh := func(script string, env ...string) (string, int) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = append(os.Environ(), append([]string{"PATH=" + pathDir + ":" + os.Getenv("PATH")}, env...)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}

	t.Run("k8s-indexed-job", func(t *testing.T) {
		b, err := os.ReadFile("../../examples/sweep/k8s-indexed-job.yaml")
		if err != nil {
			t.Fatal(err)
		}
		docs := strings.Split(string(b), "\n---\n")
		if len(docs) != 2 {
			t.Fatalf("%d YAML documents, want the sweep and the report", len(docs))
		}
		var job, report k8sJob
		if err := yaml.Unmarshal([]byte(docs[0]), &job); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal([]byte(docs[1]), &report); err != nil {
			t.Fatal(err)
		}
		c := job.Spec.Template.Spec.Containers[0]
		env := map[string]string{}
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
		if job.Spec.CompletionMode != "Indexed" || env["LOCKSTORM_SHARDS"] != fmt.Sprint(job.Spec.Completions) || env["SWEEP"] != "--all --seeds 8" {
			t.Fatalf("the Job is not a 4-way indexed sweep: %+v, env %v", job.Spec, env)
		}
		results := t.TempDir()
		for i := 0; i < job.Spec.Completions; i++ {
			script := strings.ReplaceAll(c.Args[0], "/results", results)
			if out, code := sh(script, fmt.Sprint("JOB_COMPLETION_INDEX=", i), "LOCKSTORM_SHARDS="+env["LOCKSTORM_SHARDS"], "SWEEP="+small); code != 0 {
				t.Fatalf("shard %d: exit %d: %s", i, code, out)
			}
		}
		merge := strings.ReplaceAll(report.Spec.Template.Spec.Containers[0].Args[0], "/results", results)
		if out, code := sh(merge); code != 0 || !strings.Contains(out, "merged: 4 runs from 4 folder(s)") {
			t.Errorf("report: exit %d: %s", code, out)
		}
	})

	t.Run("ci-matrix", func(t *testing.T) {
		b, err := os.ReadFile("../../examples/sweep/ci-matrix.yml")
		if err != nil {
			t.Fatal(err)
		}
		var wf struct {
			Env  map[string]string `yaml:"env"`
			Jobs map[string]struct {
				Strategy struct {
					Matrix struct {
						Shard []int `yaml:"shard"`
					} `yaml:"matrix"`
				} `yaml:"strategy"`
				Steps []struct {
					Name string `yaml:"name"`
					Run  string `yaml:"run"`
				} `yaml:"steps"`
			} `yaml:"jobs"`
		}
		if err := yaml.Unmarshal(b, &wf); err != nil {
			t.Fatal(err)
		}
		step := func(job, name string) string {
			for _, s := range wf.Jobs[job].Steps {
				if s.Name == name {
					return s.Run
				}
			}
			t.Fatalf("no step %q in job %s", name, job)
			return ""
		}
		shards := wf.Jobs["shard"].Strategy.Matrix.Shard
		if len(shards) != 4 || wf.Env["SWEEP"] != "--all --seeds 8" {
			t.Fatalf("matrix %v, SWEEP %q", shards, wf.Env["SWEEP"])
		}
		work := t.TempDir()
		local := func(s string) string {
			return strings.NewReplacer("./build/lockstorm", bin, "out/", work+"/out/").Replace(s)
		}
		for _, k := range shards {
			script := local(strings.ReplaceAll(step("shard", "run the shard"), "${{ matrix.shard }}", fmt.Sprint(k)))
			if out, code := sh(script, "SWEEP="+small); code != 0 {
				t.Fatalf("shard %d: exit %d: %s", k, code, out)
			}
		}
		if out, code := sh(local(step("report", "merge the shards"))); code != 0 || !strings.Contains(out, "merged: 4 runs from 4 folder(s)") {
			t.Errorf("report: exit %d: %s", code, out)
		}
	})
}

type k8sJob struct {
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Env []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					Args []string `yaml:"args"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

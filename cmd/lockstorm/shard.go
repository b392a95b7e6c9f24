package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/lockstorm/lockstorm/reports"
)

// ResultsFile is what a sharded run writes beside its run folders: one
// JSON row per run, safe ones included (their folders are not kept), so
// `lockstorm report DIR...` can merge shards into one table.
const ResultsFile = "results.jsonl"

// shard is the K-th (0-based) of N disjoint slices of a sweep's jobs.
type shard struct{ k, n int }

// parseShard reads --shard K/N, or else the environment a cluster or CI
// matrix sets: LOCKSTORM_SHARD as K/N, or LOCKSTORM_SHARD (or a Kubernetes
// Indexed Job's JOB_COMPLETION_INDEX) as K with LOCKSTORM_SHARDS as N. K is
// 0-based everywhere, as JOB_COMPLETION_INDEX is: 0/2 and 1/2 are the two
// halves. No flag and no environment: the whole sweep (0 of 1). A shard
// half given (K without N) is an error, never the whole sweep run
// silently on every machine of the matrix.
func parseShard(flagValue string) (shard, error) {
	v, from := flagValue, "--shard"
	if v == "" {
		k, n := os.Getenv("LOCKSTORM_SHARD"), os.Getenv("LOCKSTORM_SHARDS")
		from = "LOCKSTORM_SHARD"
		if k == "" {
			k, from = os.Getenv("JOB_COMPLETION_INDEX"), "JOB_COMPLETION_INDEX"
		}
		switch {
		case strings.Contains(k, "/"):
			if n != "" && !strings.HasSuffix(k, "/"+n) {
				return shard{}, fmt.Errorf("%s=%s and LOCKSTORM_SHARDS=%s disagree on N", from, k, n)
			}
			v = k
		case k != "" && n != "":
			v, from = k+"/"+n, from+" with LOCKSTORM_SHARDS"
		case k != "" && from == "LOCKSTORM_SHARD":
			return shard{}, fmt.Errorf("LOCKSTORM_SHARD=%s without N: set LOCKSTORM_SHARD=K/N or LOCKSTORM_SHARDS=N (K is 0-based)", k)
		}
	}
	if v == "" {
		return shard{0, 1}, nil
	}
	ks, ns, ok := strings.Cut(v, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || k < 0 || k >= n {
		return shard{}, fmt.Errorf("%s %q: want K/N with 0 <= K < N (K is 0-based)", from, v)
	}
	return shard{k, n}, nil
}

// pick keeps the jobs of this shard: jobs sorted by (scenario, impl,
// seed), every N-th from the K-th, so the slices are disjoint, cover the
// sweep, and do not depend on the order the flags listed things in.
func (s shard) pick(jobs []job) []job {
	if s.n <= 1 {
		return jobs
	}
	key := func(j job) string { return fmt.Sprintf("%s\x00%s\x00%020d", j.spec.Name, j.impl, j.seed) }
	sorted := append([]job(nil), jobs...)
	sort.SliceStable(sorted, func(a, b int) bool { return key(sorted[a]) < key(sorted[b]) })
	var out []job
	for i, j := range sorted {
		if i%s.n == s.k {
			out = append(out, j)
		}
	}
	return out
}

// writeResults writes rows to dir/results.jsonl.
func writeResults(dir string, rows []reports.Row) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, ResultsFile))
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, r := range rows {
		if err := enc.Encode(r); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// readResults reads every dir's results.jsonl (a shard's rows).
func readResults(dirs []string) ([]reports.Row, error) {
	var rows []reports.Row
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ResultsFile))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if line == "" {
				continue
			}
			var r reports.Row
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", filepath.Join(d, ResultsFile), i+1, err)
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

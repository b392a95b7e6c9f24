package main

import (
	"strings"
	"testing"
)

// TestParseShardForms: --shard and the environment name one 0-based
// slice, in every form the docs give; a half-given shard is an error,
// never the whole sweep on every machine.
func TestParseShardForms(t *testing.T) {
	for _, tc := range []struct {
		name string
		flag string
		env  map[string]string
		want shard
		err  string
	}{
		{"nothing", "", nil, shard{0, 1}, ""},
		{"flag", "1/2", nil, shard{1, 2}, ""},
		{"flag wins", "0/2", map[string]string{"LOCKSTORM_SHARD": "1/2"}, shard{0, 2}, ""},
		{"env K/N", "", map[string]string{"LOCKSTORM_SHARD": "1/2"}, shard{1, 2}, ""},
		{"env K and N", "", map[string]string{"LOCKSTORM_SHARD": "1", "LOCKSTORM_SHARDS": "2"}, shard{1, 2}, ""},
		{"env K/N agreeing with N", "", map[string]string{"LOCKSTORM_SHARD": "1/2", "LOCKSTORM_SHARDS": "2"}, shard{1, 2}, ""},
		{"kubernetes index", "", map[string]string{"JOB_COMPLETION_INDEX": "3", "LOCKSTORM_SHARDS": "4"}, shard{3, 4}, ""},
		{"K without N", "", map[string]string{"LOCKSTORM_SHARD": "1"}, shard{}, "without N"},
		{"K/N disagreeing with N", "", map[string]string{"LOCKSTORM_SHARD": "1/2", "LOCKSTORM_SHARDS": "3"}, shard{}, "disagree"},
		{"K is 0-based", "", map[string]string{"LOCKSTORM_SHARD": "2/2"}, shard{}, "0 <= K < N"},
		{"flag K is 0-based", "2/2", nil, shard{}, "0 <= K < N"},
		{"garbage", "half", nil, shard{}, "want K/N"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"LOCKSTORM_SHARD", "LOCKSTORM_SHARDS", "JOB_COMPLETION_INDEX"} {
				t.Setenv(k, tc.env[k])
			}
			got, err := parseShard(tc.flag)
			switch {
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("err %v, want one saying %q", err, tc.err)
			case tc.err == "" && err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Errorf("shard %+v, want %+v", got, tc.want)
			}
		})
	}
}

package exec

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// TestTellerClient: what a library that prefixes its keys, signals a lost
// lock and releases without an answer can say. Its hello declares the key
// it really uses (redis_key) and that it tells losses (lost=true); a "lost
// TOKEN" line closes that lease's Lost channel and no other; a release
// answered "unknown" is an unknown outcome, not a malformed reply.
func TestTellerClient(t *testing.T) {
	t.Setenv("LOCKSTORM_TEST_CLIENT", "teller")
	info, err := Describe(context.Background(), []string{os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	if info.RedisKey == nil || info.RedisKey("lock:0") != "pfx:lock:0" {
		t.Fatal("hello redis_key=pfx:{key} did not give Info.RedisKey pfx:lock:0")
	}
	l := fake(t, "teller", lockimpl.Options{WaitTimeout: time.Second}, nil)
	l.tellsLost = true
	kept, err := l.Acquire(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := l.Acquire(context.Background(), "gone")
	if err != nil {
		t.Fatal(err)
	}
	later, err := l.Acquire(context.Background(), "later")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(context.Background(), "trigger"); err != nil {
		t.Fatal(err)
	}
	for _, lease := range []*lockimpl.Lease{gone, later} {
		select {
		case <-lease.Lost:
		case <-time.After(2 * time.Second):
			t.Fatalf("lost %s did not close the lease's Lost", lease.Token)
		}
	}
	select {
	case <-kept.Lost:
		t.Fatal("the other lease was closed too")
	default:
	}
	err = l.Release(context.Background(), kept)
	if err == nil || errors.Is(err, lockimpl.ErrNotHeld) || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("release answered unknown: %v, want an unknown outcome", err)
	}
	if st := l.ProcessStats(); st.Malformed != 0 || st.Starts != 1 {
		t.Errorf("stats %+v: unknown and lost are protocol, not breakage", st)
	}
}

func TestHelloFields(t *testing.T) {
	for _, tc := range []struct {
		line, err string
		lost      bool
		key       string
	}{
		{line: "hello 1 lost=true redis_key=mutex:{key}", lost: true, key: "mutex:{key}"},
		{line: "hello 1 redis_key=%7Bkey%7D:lock", key: "{key}:lock"},
		{line: "hello 1 redis_key=mutex:", err: "containing {key}"},
		{line: "hello 1", key: ""},
	} {
		f := strings.Split(tc.line, " ")
		h, err := parseHello(message{verb: f[0], args: f[1:], raw: tc.line})
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: %v, want an error with %q", tc.line, err, tc.err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.line, err)
		case h.Lost != tc.lost || h.RedisKey != tc.key:
			t.Errorf("%q: lost %v key %q, want %v %q", tc.line, h.Lost, h.RedisKey, tc.lost, tc.key)
		}
	}
}

// TestHelloGrantChecked: grant_checked, grant_monotonic and
// grant_confirmed in a hello reach the claims.
func TestHelloGrantChecked(t *testing.T) {
	for _, tc := range []struct {
		line           string
		checked, monot bool
	}{
		{"hello 1 topology=single expiry=server release=owner-checked grant_checked=true", true, false},
		{"hello 1 topology=single expiry=server release=owner-checked grant_checked=true grant_monotonic=true", true, true},
		{"hello 1 topology=single expiry=server release=owner-checked grant_checked=true grant_confirmed=true", true, false},
	} {
		f := strings.Split(tc.line, " ")
		h, err := parseHello(message{verb: f[0], args: f[1:], raw: tc.line})
		confirmed := strings.Contains(tc.line, "grant_confirmed=true")
		if err != nil || h.Claims.GrantChecked != tc.checked || h.Claims.GrantMonotonic != tc.monot || h.Claims.GrantConfirmed != confirmed {
			t.Errorf("%q: claims %+v, err %v: want grant_checked %v, grant_monotonic %v", tc.line, h.Claims, err, tc.checked, tc.monot)
		}
	}
}

// TestHelloRenewalEvery: renewal_every in a hello reaches the claims as a
// share of the TTL; not a number, or not a share, is refused.
func TestHelloRenewalEvery(t *testing.T) {
	for _, tc := range []struct {
		line string
		want float64
		ok   bool
	}{
		{"hello 1 topology=single expiry=server release=owner-checked renewal=true", 0, true},
		{"hello 1 topology=single expiry=server release=owner-checked renewal=true renewal_every=0.8", 0.8, true},
		{"hello 1 topology=single expiry=server release=owner-checked renewal=true renewal_every=often", 0, false},
		{"hello 1 topology=single expiry=server release=owner-checked renewal=true renewal_every=1.5", 0, false},
	} {
		f := strings.Split(tc.line, " ")
		h, err := parseHello(message{verb: f[0], args: f[1:], raw: tc.line})
		if (err == nil) != tc.ok || err == nil && h.Claims.RenewalEvery != tc.want {
			t.Errorf("%q: renewal_every %v, err %v: want %v, ok %v", tc.line, h.Claims.RenewalEvery, err, tc.want, tc.ok)
		}
	}
}

// TestHelloBackoff: backoff_growth and backoff_cap in a hello reach the
// claims; one without the other, a growth of 1 or less, or not a number,
// is refused.
func TestHelloBackoff(t *testing.T) {
	const base = "hello 1 topology=single expiry=server release=owner-checked"
	for _, tc := range []struct {
		line        string
		growth, cap float64
		ok          bool
	}{
		{base, 0, 0, true},
		{base + " backoff_growth=2 backoff_cap=0.25", 2, 0.25, true},
		{base + " backoff_growth=2", 0, 0, false},
		{base + " backoff_cap=0.25", 0, 0, false},
		{base + " backoff_growth=1 backoff_cap=0.25", 0, 0, false},
		{base + " backoff_growth=fast backoff_cap=0.25", 0, 0, false},
	} {
		f := strings.Split(tc.line, " ")
		h, err := parseHello(message{verb: f[0], args: f[1:], raw: tc.line})
		if (err == nil) != tc.ok || err == nil && (h.Claims.BackoffGrowth != tc.growth || h.Claims.BackoffCap != tc.cap) {
			t.Errorf("%q: backoff %v/%v, err %v: want %v/%v, ok %v", tc.line, h.Claims.BackoffGrowth, h.Claims.BackoffCap, err, tc.growth, tc.cap, tc.ok)
		}
	}
}

// TestHelloEveryClaim: every boolean claim lockimpl.Claims has can be
// declared in a hello and reaches the claims, true where it says true and
// false where it says false or is left out (a claim added there and not
// to setClaim would refuse every client that declares it).
func TestHelloEveryClaim(t *testing.T) {
	const base = "hello 1 topology=single expiry=server release=owner-checked"
	for _, name := range lockimpl.ClaimNames() {
		if _, values, _ := (lockimpl.Claims{}).ClaimField(name); len(values) != 2 || values[0] != "true" {
			continue
		}
		for _, tc := range []struct{ line, want string }{
			{base + " " + name + "=true", "true"},
			{base + " " + name + "=false", "false"},
			{base, "false"},
		} {
			f := strings.Split(tc.line, " ")
			h, err := parseHello(message{verb: f[0], args: f[1:], raw: tc.line})
			if err != nil {
				t.Errorf("%q: %v", tc.line, err)
				continue
			}
			if v, _, _ := h.Claims.ClaimField(name); v != tc.want {
				t.Errorf("%q: the claims say %s=%s, want %s", tc.line, name, v, tc.want)
			}
		}
	}
}

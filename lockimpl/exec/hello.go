package exec

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Protocol is the protocol version this package speaks.
const Protocol = "1"

// startTimeout bounds a client's start-up: from its start to its hello
// reply (an interpreter loading its Redis library on a loaded machine).
const startTimeout = 60 * time.Second

// Hello is what a client process says about itself in its hello reply.
type Hello struct {
	// Name is the short name for tables ("" : derived from the command).
	Name string
	// Summary is one line for `lockstorm list`.
	Summary string
	// Nodes is how many Redis masters the client needs (default 1).
	Nodes int
	// Points are its failpoints (impl/step).
	Points []string
	// Claims are what it declares about itself, as a Go lock does in
	// lockimpl.Info.Claims; the battery derives its expectations from them.
	Claims lockimpl.Claims
	// Extend says the client answers extend requests (hello extend=true);
	// the runner sends none to a client that did not say so.
	Extend bool
	// Lost says the client tells when its library reports a lock lost
	// (hello lost=true; "lost TOKEN" lines): its leases then have a Lost
	// channel, which a careful client heeds.
	Lost bool
	// RedisKey is the key the library really uses for the harness's key,
	// with {key} standing for it (hello redis_key=mutex:{key}), for a
	// library that prefixes its keys and cannot be told otherwise; ""
	// is the key itself. The servers' observers watch that key.
	RedisKey string
}

// isClaim says whether a hello field is a claim (lockimpl.ClaimNames).
func isClaim(k string) bool {
	for _, n := range lockimpl.ClaimNames() {
		if n == k {
			return true
		}
	}
	return false
}

// setClaim sets one claim field from its hello text.
func setClaim(c *lockimpl.Claims, k, v string) error {
	flag := func() (bool, error) {
		switch v {
		case "true", "yes":
			return true, nil
		case "false", "no":
			return false, nil
		}
		return false, fmt.Errorf("want true or false, got %q", v)
	}
	var err error
	switch k {
	case "topology":
		c.Topology = lockimpl.Topology(v)
	case "expiry":
		c.Expiry = lockimpl.Expiry(v)
	case "release":
		c.Release = lockimpl.Release(v)
	case "absent_release_ok":
		c.AbsentReleaseOK, err = flag()
	case "reentrant":
		c.Reentrant, err = flag()
	case "racy_takeover":
		c.RacyTakeover, err = flag()
	case "fencing":
		c.Fencing, err = flag()
	case "renewal":
		c.Renewal, err = flag()
	case "renewal_every":
		c.RenewalEvery, err = strconv.ParseFloat(v, 64)
	case "replica_ack":
		c.ReplicaAck, err = flag()
	case "whole_seconds":
		c.WholeSeconds, err = flag()
	case "server_ttl":
		c.ServerTTL, err = flag()
	case "grant_checked":
		c.GrantChecked, err = flag()
	case "grant_monotonic":
		c.GrantMonotonic, err = flag()
	case "grant_confirmed":
		c.GrantConfirmed, err = flag()
	case "extend_checked":
		c.ExtendChecked, err = flag()
	case "notified_wait":
		c.NotifiedWait, err = flag()
	case "extend_recreates":
		c.ExtendRecreates, err = flag()
	case "fixed_retry_delay":
		c.FixedRetryDelay, err = flag()
	case "backoff_growth":
		c.BackoffGrowth, err = strconv.ParseFloat(v, 64)
	case "backoff_cap":
		c.BackoffCap, err = strconv.ParseFloat(v, 64)
	case "extend_retries":
		c.ExtendRetries, err = flag()
	case "waits_out":
		c.WaitsOut, err = flag()
	default:
		return fmt.Errorf("claim %q is not supported by this protocol version", k)
	}
	return err
}

// parseHello reads "hello 1 k=v ...".
func parseHello(m message) (Hello, error) {
	if m.verb != "hello" || len(m.args) < 1 || m.args[0] != Protocol {
		return Hello{}, fmt.Errorf("want %q, got %q", "hello "+Protocol+" ...", m.raw)
	}
	h := Hello{Nodes: 1}
	for _, kv := range m.args[1:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return Hello{}, fmt.Errorf("hello field %q: want key=value", kv)
		}
		v, err := url.PathUnescape(v)
		if err != nil {
			return Hello{}, fmt.Errorf("hello field %q: %w", kv, err)
		}
		switch {
		case k == "name":
			h.Name = v
		case k == "summary":
			h.Summary = v
		case k == "nodes":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return Hello{}, fmt.Errorf("hello field %q: want a positive count", kv)
			}
			h.Nodes = n
		case k == "extend":
			h.Extend = v == "true"
		case k == "lost":
			h.Lost = v == "true"
		case k == "redis_key":
			if !strings.Contains(v, "{key}") || strings.ContainsAny(v, " \t") {
				return Hello{}, fmt.Errorf("hello field %q: want a key template containing {key}, no spaces", kv)
			}
			h.RedisKey = v
		case k == "points":
			if v != "" {
				h.Points = strings.Split(v, ",")
			}
		case isClaim(k):
			if err := setClaim(&h.Claims, k, v); err != nil {
				return Hello{}, fmt.Errorf("hello field %q: %w", kv, err)
			}
		default:
			// Unknown fields are ignored: a newer client may say more.
		}
	}
	if err := h.Claims.Validate(); err != nil {
		return Hello{}, fmt.Errorf("hello: %w", err)
	}
	return h, nil
}

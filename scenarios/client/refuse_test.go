package client

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockstorm/lockstorm/lockimpl"
	"github.com/lockstorm/lockstorm/scenarios/nemesis"
)

// TestRefuseHook: a command through a refused link fails as never sent,
// without a dial reaching the link; any dial that fails (a failover
// client's Sentinel lookup) is reported as a dial error; a dial that works
// is left alone.
func TestRefuseHook(t *testing.T) {
	n := nemesis.NewNetwork()
	defer n.Close()
	l, err := n.AddLink("h1", "n1", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	l.Refuse(true)
	rdb := redis.NewClient(&redis.Options{Addr: l.Addr, MaxRetries: -1, DialerRetries: 1, DisableIdentity: true, Protocol: 2})
	defer rdb.Close()
	rdb.AddHook(RefuseHook{Link: l})
	err = rdb.Set(context.Background(), "k", "v", 0).Err()
	if err == nil || !lockimpl.NotSent(err) {
		t.Errorf("SET through a refused link: %v, NotSent %v", err, lockimpl.NotSent(err))
	}
	lookup := errors.New("sentinel: no master")
	for _, tc := range []struct {
		next    error
		notSent bool
	}{{lookup, true}, {&net.OpError{Op: "dial", Err: lookup}, true}, {nil, false}} {
		dial := RefuseHook{}.DialHook(func(context.Context, string, string) (net.Conn, error) { return nil, tc.next })
		_, err := dial(context.Background(), "tcp", "x:1")
		if (err != nil) != (tc.next != nil) || lockimpl.NotSent(err) != tc.notSent || tc.next != nil && !errors.Is(err, lookup) {
			t.Errorf("dial failing with %v: %v, NotSent %v", tc.next, err, lockimpl.NotSent(err))
		}
	}
}

package nemesis

import (
	"context"
	"sync"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// BenchmarkLinkPing: PINGs from 16 clients at once, direct to the server,
// through a link with no toxic (direct pipes), through a link with a
// zero-latency toxic (toxiproxy's chain), and through a plain toxiproxy
// proxy (what links were): the cost of a hop, compared within one run.
func BenchmarkLinkPing(b *testing.B) {
	s := cluster.StartForTest(b, 1)
	addr := s.Nodes()[0].Addr
	n := NewNetwork()
	defer n.Close()
	l, err := n.AddLink("h1", "n1", addr)
	if err != nil {
		b.Fatal(err)
	}
	chained, err := n.AddLink("h2", "n1", addr)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := chained.AddToxic(Toxic{Type: "latency", Stream: "upstream", Attributes: map[string]any{"latency": 0}}); err != nil {
		b.Fatal(err)
	}
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	tp := toxiproxy.NewProxy(srv, "stock", "127.0.0.1:0", addr)
	if err := tp.Start(); err != nil {
		b.Fatal(err)
	}
	defer tp.Stop()
	for _, tc := range []struct{ name, addr string }{
		{"direct", addr}, {"link", l.Addr}, {"link-chained", chained.Addr}, {"toxiproxy", tp.Listen},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const clients = 16
			cs := make([]*redis.Client, clients)
			for i := range cs {
				cs[i] = redis.NewClient(&redis.Options{Addr: tc.addr, PoolSize: 1})
				defer cs[i].Close()
				cs[i].Ping(context.Background())
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := range cs {
				wg.Add(1)
				go func(c *redis.Client) {
					defer wg.Done()
					for j := 0; j < b.N/clients+1; j++ {
						if err := c.Ping(context.Background()).Err(); err != nil {
							b.Error(err)
							return
						}
					}
				}(cs[i])
			}
			wg.Wait()
		})
	}
}

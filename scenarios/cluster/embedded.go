package cluster

import (
	"fmt"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// Minis is a cluster of in-process miniredis servers, for machines without
// redis-server. TTLs run on the wall clock (ClockTTL), so expiry behaves in
// real time as on a real server; a server clock offset moves miniredis's own
// clock.
type Minis struct {
	minis []*miniredis.Miniredis
	nodes []Node
	once  sync.Once
}

// StartEmbedded starts o.Nodes miniredis servers on loopback.
func StartEmbedded(o Options) (*Minis, error) {
	m := &Minis{}
	for i := 0; i < o.Nodes; i++ {
		mr := miniredis.NewMiniRedis()
		if err := mr.StartAddr("127.0.0.1:0"); err != nil {
			m.Close()
			return nil, fmt.Errorf("start embedded redis n%d: %w", i+1, err)
		}
		mr.ClockTTL(true)
		m.minis = append(m.minis, mr)
		m.nodes = append(m.nodes, Node{Name: fmt.Sprintf("n%d", i+1), Addr: mr.Addr()})
	}
	return m, nil
}

// Kind implements Cluster.
func (m *Minis) Kind() string { return Embedded }

// Nodes implements Cluster.
func (m *Minis) Nodes() []Node { return append([]Node(nil), m.nodes...) }

// Mini returns node i's miniredis, for clock faults.
func (m *Minis) Mini(i int) *miniredis.Miniredis { return m.minis[i] }

// SetClockOffset makes node i's clock run d ahead of real time (d may be
// negative). It must be refreshed to keep time moving: call it periodically.
func (m *Minis) SetClockOffset(i int, d time.Duration) {
	m.minis[i].SetTime(time.Now().Add(d))
}

// Close implements Cluster.
func (m *Minis) Close() error {
	m.once.Do(func() {
		for _, mr := range m.minis {
			mr.Close()
		}
	})
	return nil
}

// Package nemesis injects the faults of a scenario: network toxics on the
// per-link proxies, client pauses and crashes, server kills and pauses,
// clock skew. Each fault kind lives in its own file behind the one-method
// Fault interface and is registered by name, as toxiproxy registers toxics.
package nemesis

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/rs/zerolog"
)

// Network is the set of proxies between client hosts and Redis nodes. Every
// host↔node pair is its own link (its own toxiproxy proxy), so a fault can
// target one client host, a node, a single link or everything.
type Network struct {
	srv   *toxiproxy.ApiServer
	mu    sync.Mutex
	links map[string]*Link // by Link.Name()
	order []*Link
	// sources maps a source IP to its process name, routers are the
	// announced addresses (see Router).
	sources map[string]string
	routers []*Router
	// sim, on a sim network (NewSimNetwork), makes every link a sim link.
	sim *simNet
}

// Link is one proxy: traffic from a client host to one node.
type Link struct {
	// Host is the client host's name (h1, h2, ...), or a replica's name for
	// replication links.
	Host string
	// Node is the node's name (n1, n2, ...).
	Node string
	// Bus says the link leads to the node's Redis Cluster bus, not to its
	// data port: a pair of cluster nodes has both, and a fault selecting
	// the pair by host and node acts on both.
	Bus bool
	// Addr is where the host dials to reach the node through this link.
	Addr string
	// proxy holds the link's toxics (its ToxicCollection); its chains run
	// only while a direction has toxics (see link.go). It never listens.
	proxy *toxiproxy.Proxy
	srv   *toxiproxy.ApiServer
	ln    net.Listener
	wg    sync.WaitGroup

	mu       sync.Mutex
	seq      int
	upstream string
	closed   bool
	conns    map[net.Conn]struct{}
	pipes    map[*pipe]struct{}
	// toxics counts the toxics per direction; names maps each toxic to
	// its direction.
	toxics [stream.NumDirections]int
	names  map[string]stream.Direction
	// refused: the link rejects connections (see Refuse).
	refused atomic.Bool
	// sim is set on a sim network's links (simlink.go): in-memory
	// connections, toxics in virtual time, no listener and no proxy.
	sim *simLink
}

// NewNetwork starts an in-process toxiproxy with no proxies yet.
func NewNetwork() *Network {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	return &Network{srv: srv, links: map[string]*Link{}}
}

// Name is host>node, or host>node bus for a bus link.
func (l *Link) Name() string {
	if l.Bus {
		return l.Host + ">" + l.Node + BusSuffix
	}
	return l.Host + ">" + l.Node
}

// BusSuffix ends the name of a cluster bus link.
const BusSuffix = " bus"

// AddLink creates and starts the proxy from host to a node at upstream. The
// proxy listens on a free loopback port.
func (n *Network) AddLink(host, node, upstream string) (*Link, error) {
	return n.addLink(host, node, upstream, false)
}

// AddBusLink is AddLink for the cluster bus of node (Link.Bus).
func (n *Network) AddBusLink(host, node, upstream string) (*Link, error) {
	return n.addLink(host, node, upstream, true)
}

func (n *Network) addLink(host, node, upstream string, bus bool) (*Link, error) {
	var l *Link
	if n.sim != nil {
		n.mu.Lock()
		// A loopback port no one listens on: the link is reached by name
		// (Network.Dial), never through a socket.
		addr := fmt.Sprintf("127.0.84.1:%d", 10000+len(n.order))
		n.mu.Unlock()
		l = &Link{Host: host, Node: node, Bus: bus, Addr: addr, upstream: upstream, sim: newSimLinkState(n.sim)}
	} else {
		var err error
		if l, err = newLink(n.srv, host, node, upstream, bus); err != nil {
			return nil, fmt.Errorf("proxy %s>%s: %w", host, node, err)
		}
	}
	n.mu.Lock()
	n.links[l.Name()] = l
	n.order = append(n.order, l)
	n.mu.Unlock()
	return l, nil
}

// Link returns the link from host to node, or nil.
func (n *Network) Link(host, node string) *Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[host+">"+node]
}

// BusLink returns the bus link from host to node, or nil.
func (n *Network) BusLink(host, node string) *Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.links[host+">"+node+BusSuffix]
}

// Links returns the links matching pred, in creation order.
func (n *Network) Links(pred func(*Link) bool) []*Link {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*Link
	for _, l := range n.order {
		if pred == nil || pred(l) {
			out = append(out, l)
		}
	}
	return out
}

// Hosts lists the distinct host names, sorted.
func (n *Network) Hosts() []string {
	seen := map[string]bool{}
	for _, l := range n.Links(nil) {
		seen[l.Host] = true
	}
	out := make([]string, 0, len(seen))
	for h := range seen {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// Toxic is a toxiproxy toxic as the proxy's JSON API describes it.
type Toxic struct {
	// Type is a toxiproxy toxic type: latency, bandwidth, timeout, reset_peer, ...
	Type string `json:"type"`
	// Stream is upstream (client → server) or downstream (server → client).
	Stream string `json:"stream"`
	// Attributes are the toxic's parameters (latency and jitter in ms, ...).
	Attributes map[string]any `json:"attributes"`
}

// AddToxic installs t on the link and returns its name, for RemoveToxic.
// Once it returns, every byte the link reads in t's direction goes through
// t, on live connections as on new ones.
func (l *Link) AddToxic(t Toxic) (string, error) {
	dir, err := stream.ParseDirection(t.Stream)
	if err != nil {
		return "", fmt.Errorf("link %s: %s toxic: %w", l.Name(), t.Type, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seq++
	name := fmt.Sprintf("%s_%s_%d", t.Type, t.Stream, l.seq)
	if l.names == nil {
		l.names = map[string]stream.Direction{}
	}
	if l.sim != nil {
		if err := l.simAdd(name, t, dir); err != nil {
			return "", err
		}
		l.names[name] = dir
		return name, nil
	}
	body, err := json.Marshal(map[string]any{
		"name": name, "type": t.Type, "stream": t.Stream, "toxicity": 1.0, "attributes": t.Attributes,
	})
	if err != nil {
		return "", err
	}
	l.beforeToxic(dir, t.Type)
	if _, err := l.proxy.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
		l.afterRemove(dir)
		return "", fmt.Errorf("link %s: add %s toxic: %w", l.Name(), t.Type, err)
	}
	l.names[name] = dir
	return name, nil
}

// RemoveToxic removes a toxic added by AddToxic.
func (l *Link) RemoveToxic(name string) error {
	if l.sim != nil {
		if err := l.simRemove(name); err != nil {
			return err
		}
		l.mu.Lock()
		delete(l.names, name)
		l.mu.Unlock()
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.removeToxic(name)
}

func (l *Link) removeToxic(name string) error {
	if err := l.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
		return fmt.Errorf("link %s: remove toxic %s: %w", l.Name(), name, err)
	}
	dir := l.names[name]
	delete(l.names, name)
	l.afterRemove(dir)
	return nil
}

// Reset removes every toxic from the link.
func (l *Link) Reset() {
	if l.sim != nil {
		l.mu.Lock()
		names := make([]string, 0, len(l.names))
		for name := range l.names {
			names = append(names, name)
		}
		l.mu.Unlock()
		for _, name := range names {
			_ = l.RemoveToxic(name)
		}
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for name := range l.names {
		_ = l.removeToxic(name)
	}
}

// Refuse makes the link reject connections, as a host whose firewall
// answers with a reset (REJECT) does, or accept them again (on false).
// Rejecting drops the live connections; from then on a connection that
// reaches the listener is reset at once, and a dialer that asks first
// (Refused) reports a refused dial instead of dialing: the harness's
// go-redis clients do (see scenarios' refuseHook), so their commands fail
// as never sent, which is what a rejected connection proves. A client
// process dials the listener itself and sees the reset.
func (l *Link) Refuse(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.refused.Store(on)
	if on {
		l.dropConns()
	}
}

// Refused says whether the link rejects connections (Refuse).
func (l *Link) Refused() bool { return l.refused.Load() }

// Upstream is the node address the link forwards to.
func (l *Link) Upstream() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.upstream
}

// Close stops every proxy and drops their connections.
func (n *Network) Close() {
	n.mu.Lock()
	links, routers := n.order, n.routers
	n.order, n.links, n.routers = nil, map[string]*Link{}, nil
	n.mu.Unlock()
	for _, r := range routers {
		r.Close()
	}
	for _, l := range links {
		l.close()
	}
}

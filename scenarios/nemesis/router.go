package nemesis

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/lockstorm/lockstorm/internal/cluster"
)

// Router is the address a Redis process is known by to the other Redis
// processes (its announced address, in the Sentinel topology). Sentinels,
// replicas and masters learn each other's addresses from each other (INFO,
// hello messages, +switch-master), so every process dials the same address
// for a given server; the router tells the dialers apart by the source IP
// each process binds its outgoing connections to (bind-source-addr: each
// process has its own 127.0.0.x) and hands each connection to the link of
// that (process, server) pair. A fault on link s1>n1 thus cuts Sentinel s1
// from n1 and nothing else, although s1 never saw the link's own address.
//
// The router itself only relays bytes; delays and cuts are the link's. A
// connection from an unknown source, or to a pair without a link, is closed
// at once, which the dialer sees as a refused server.
type Router struct {
	// Server is the name of the process behind the router (n1, r1, s1, ...).
	Server string
	// Addr is where the router listens: the server's announced address.
	Addr string
	// Bus: the router stands for the server's cluster bus and hands
	// connections to bus links.
	Bus bool
	net *Network
	ln  net.Listener
	wg  sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	done  bool
}

// SetSource declares that connections from ip come from the process named
// host (r1, s1, n1, ...), for the routers.
func (n *Network) SetSource(ip, host string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.sources == nil {
		n.sources = map[string]string{}
	}
	n.sources[ip] = host
}

func (n *Network) source(ip string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sources[ip]
}

// AddRouter starts a router for server on a free loopback port.
func (n *Network) AddRouter(server string) (*Router, error) { return n.addRouter(server, false) }

// AddBusRouter starts a router for server's cluster bus (Router.Bus).
func (n *Network) AddBusRouter(server string) (*Router, error) { return n.addRouter(server, true) }

func (n *Network) addRouter(server string, bus bool) (*Router, error) {
	ln, err := cluster.Listen()
	if err != nil {
		return nil, fmt.Errorf("router for %s: %w", server, err)
	}
	r := &Router{Server: server, Addr: ln.Addr().String(), Bus: bus, net: n, ln: ln, conns: map[net.Conn]struct{}{}}
	n.mu.Lock()
	n.routers = append(n.routers, r)
	n.mu.Unlock()
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

func (r *Router) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.relay(c)
		}()
	}
}

// track registers c so Close can cut it; false once the router is closed.
func (r *Router) track(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.done {
		return false
	}
	r.conns[c] = struct{}{}
	return true
}

func (r *Router) untrack(c net.Conn) {
	r.mu.Lock()
	delete(r.conns, c)
	r.mu.Unlock()
}

func (r *Router) relay(c net.Conn) {
	defer c.Close()
	host := ""
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		host = r.net.source(a.IP.String())
	}
	link := r.net.Link(host, r.Server)
	if r.Bus {
		link = r.net.BusLink(host, r.Server)
	}
	if host == "" || link == nil {
		return
	}
	up, err := net.Dial("tcp", link.Addr)
	if err != nil {
		return
	}
	defer up.Close()
	if !r.track(c) {
		return
	}
	defer r.untrack(c)
	// Either side closing ends both: a link that drops its connections (a
	// healed blackhole, a redirected upstream) must look the same to the
	// dialer as it would without the router.
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	c.Close()
	up.Close()
	<-done
}

// Close stops the router and cuts its connections.
func (r *Router) Close() error {
	err := r.ln.Close()
	r.mu.Lock()
	r.done = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Routers lists the routers in creation order.
func (n *Network) Routers() []*Router {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Router(nil), n.routers...)
}

package nemesis

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Targets is what one injection of a fault concretely applied to. A fault
// that applied to nothing (Count 0) tested nothing, and the timeline records
// it as such instead of letting the run pass for one that faced the fault.
type Targets struct {
	// Links are the links (host>node) a network fault installed toxics on,
	// or a failover redirected.
	Links []string `json:"links,omitempty"`
	// Clients are the clients the fault acted on: paused, crashed or
	// skewed by a client fault; for a network fault, every client whose
	// connections run through the touched links (all clients of the
	// affected hosts, not only a named or picked one).
	Clients []int `json:"clients,omitempty"`
	// Nodes are the servers a server fault or a failover acted on.
	Nodes []string `json:"nodes,omitempty"`
	// Replicas are the replicas a failover promoted, or whose replication
	// link a network fault touched.
	Replicas []string `json:"replicas,omitempty"`
	// Picked is what a pick drew from the run's seed ("client 3",
	// "nodes [n2 n4]"), empty without pick.
	Picked string `json:"picked,omitempty"`
	// Missing lists explicit targets that do not exist in the run (client 9
	// of 4, node n9 of 1, host h99). They are never wrapped onto another
	// target: they are left out, and reported.
	Missing []string `json:"missing,omitempty"`
}

// Count is how many targets of every sort the fault applied to; 0 means it
// applied to nothing.
func (t Targets) Count() int {
	return len(t.Links) + len(t.Clients) + len(t.Nodes) + len(t.Replicas)
}

// String describes the targets for the history, e.g.
// "picked client 3: 1 link [h4>n1] carrying clients [3]".
func (t Targets) String() string {
	var parts []string
	if len(t.Nodes) > 0 {
		parts = append(parts, fmt.Sprintf("nodes %v", t.Nodes))
	}
	if len(t.Replicas) > 0 {
		parts = append(parts, fmt.Sprintf("replicas %v", t.Replicas))
	}
	if len(t.Links) > 0 {
		s := fmt.Sprintf("%d links %v", len(t.Links), t.Links)
		if len(t.Links) == 1 {
			s = fmt.Sprintf("1 link %v", t.Links)
		}
		if len(t.Clients) > 0 {
			s += fmt.Sprintf(" carrying clients %v", t.Clients)
		}
		parts = append(parts, s)
	} else if len(t.Clients) > 0 {
		parts = append(parts, fmt.Sprintf("clients %v", t.Clients))
	}
	if len(parts) == 0 {
		parts = append(parts, "nothing")
	}
	s := strings.Join(parts, ", ")
	if t.Picked != "" {
		s = "picked " + t.Picked + ": " + s
	}
	if len(t.Missing) > 0 {
		s += fmt.Sprintf(" (no such %s)", strings.Join(t.Missing, ", "))
	}
	return s
}

// selection is a spec's targets resolved against one run: the one mechanism
// every fault kind selects with. Resolution never wraps: a client, host or
// node that the run does not have selects nothing and is listed in missing.
type selection struct {
	// clients are the explicit clients that exist, plus the picked one.
	clients []int
	// hosts are the explicit hosts that exist (a network fault adds the
	// hosts of clients; a client fault acts on every client of these).
	hosts []string
	// nodes are the explicit nodes that exist, or the picked minority or
	// majority.
	nodes []string
	// byHost and byNode say whether the spec selects on that side at all:
	// a side it does not select on means every host (node), while a side
	// it selects on but that resolved to nothing means none.
	byHost, byNode bool
	picked         string
	missing        []string
}

// resolve selects the spec's targets in env, drawing a pick from env.Rand.
// A pick draws exactly once (one IntN for client, one Perm for minority or
// majority), so a seed replays the same choice.
func (s Spec) resolve(env *Env) selection {
	var sel selection
	sel.byHost = len(s.Hosts) > 0 || len(s.Clients) > 0 || s.Pick == "client" || s.Pick == "holder"
	sel.byNode = len(s.Nodes) > 0 || s.Pick == "minority" || s.Pick == "majority"
	s.resolveClients(env, &sel)
	s.resolveHosts(env, &sel)
	s.resolveNodes(env, &sel)
	return sel
}

// resolveClients selects the named clients and the picked one.
func (s Spec) resolveClients(env *Env, sel *selection) {
	clients := map[int]bool{}
	for _, c := range s.Clients {
		if c < 0 || c >= env.Clients {
			sel.missing = append(sel.missing, fmt.Sprintf("client %d", c))
			continue
		}
		clients[c] = true
	}
	if (s.Pick == "client" || s.Pick == "holder") && env.Clients > 0 {
		c, what := pickClient(s.Pick, env)
		clients[c] = true
		sel.picked = what
	}
	for c := 0; c < env.Clients; c++ {
		if clients[c] {
			sel.clients = append(sel.clients, c)
		}
	}
}

// resolveHosts selects the named hosts: the clients' hosts, and the
// replica hosts (r1, ...) that have links but no clients.
func (s Spec) resolveHosts(env *Env, sel *selection) {
	known := map[string]bool{}
	for c := 0; c < env.Clients; c++ {
		known[env.ClientHost(c)] = true
	}
	if env.Net != nil {
		for _, h := range env.Net.Hosts() {
			known[h] = true
		}
	}
	hosts := map[string]bool{}
	for _, h := range s.Hosts {
		if !known[h] {
			sel.missing = append(sel.missing, "host "+h)
			continue
		}
		hosts[h] = true
	}
	sel.hosts = slices.Sorted(maps.Keys(hosts))
}

// resolveNodes selects the named nodes, or draws a minority or majority.
func (s Spec) resolveNodes(env *Env, sel *selection) {
	var all []string
	if env.Cluster != nil {
		for _, n := range env.Cluster.Nodes() {
			all = append(all, n.Name)
		}
	}
	// Links may lead to servers that are not nodes clients lock on: the
	// replicas and Sentinels of the Sentinel topology (r1, s1, ...); a
	// network fault can target them by name.
	linked := map[string]bool{}
	if env.Net != nil {
		for _, l := range env.Net.Links(nil) {
			linked[l.Node] = true
		}
	}
	switch {
	case len(s.Nodes) > 0:
		for _, n := range s.Nodes {
			if !slices.Contains(all, n) && !linked[n] {
				sel.missing = append(sel.missing, "node "+n)
				continue
			}
			if !slices.Contains(sel.nodes, n) {
				sel.nodes = append(sel.nodes, n)
			}
		}
		sort.Strings(sel.nodes)
	case (s.Pick == "minority" || s.Pick == "majority") && len(all) > 0:
		n := len(all)/2 + 1
		if s.Pick == "minority" {
			n = max((len(all)-1)/2, 1)
		}
		for _, i := range env.Rand.Perm(len(all))[:n] {
			sel.nodes = append(sel.nodes, all[i])
		}
		sort.Strings(sel.nodes)
		sel.picked = fmt.Sprintf("nodes %v", sel.nodes)
	}
}

// pickClient draws one client (exactly one IntN, so a seed replays the
// draw): any client, or for holder one of the clients holding a lease now,
// any client when none holds. What was drawn is said for the history.
func pickClient(pick string, env *Env) (int, string) {
	var holders []int
	if pick == "holder" && env.Control != nil {
		for _, c := range env.Control.Holders() {
			if c >= 0 && c < env.Clients {
				holders = append(holders, c)
			}
		}
	}
	if len(holders) == 0 {
		c := env.Rand.IntN(env.Clients)
		if pick == "holder" {
			return c, fmt.Sprintf("client %d (no holder)", c)
		}
		return c, fmt.Sprintf("client %d", c)
	}
	c := holders[env.Rand.IntN(len(holders))]
	return c, fmt.Sprintf("client %d (holder)", c)
}

// clientTargets are a client fault's targets: the clients it acts on.
func (sel selection) clientTargets(env *Env) Targets {
	return Targets{Clients: sel.faultClients(env), Picked: sel.picked, Missing: sel.missing}
}

// nodeTargets are a server fault's targets: the selected nodes.
func (sel selection) nodeTargets() Targets {
	return Targets{Nodes: sel.nodes, Picked: sel.picked, Missing: sel.missing}
}

// faultClients are the clients a client fault acts on: the selected ones
// and every client of a selected host.
func (sel selection) faultClients(env *Env) []int {
	var out []int
	for c := 0; c < env.Clients; c++ {
		if slices.Contains(sel.clients, c) || slices.Contains(sel.hosts, env.ClientHost(c)) {
			out = append(out, c)
		}
	}
	return out
}

// links are the links a network fault acts on: from the selected hosts
// (every host when the spec names no host, client or client pick) to the
// selected nodes (every node when it names none).
//
// A link belongs to a host, not to a client: clients are grouped onto hosts
// (client c on host h(c mod hosts + 1)), so when there are fewer hosts than
// clients a fault on one client hits its host's links and thereby every
// client sharing that host. targets says so by listing all of them.
func (sel selection) links(env *Env) []*Link {
	hosts := slices.Clone(sel.hosts)
	for _, c := range sel.clients {
		hosts = append(hosts, env.ClientHost(c))
	}
	return env.Net.Links(func(l *Link) bool {
		return (!sel.byHost || slices.Contains(hosts, l.Host)) &&
			(!sel.byNode || slices.Contains(sel.nodes, l.Node))
	})
}

// networkTargets describes links as targets: the links, the clients whose
// traffic crosses them and the replicas whose replication link they are.
func (sel selection) networkTargets(env *Env, links []*Link) Targets {
	t := Targets{Picked: sel.picked, Missing: sel.missing}
	hosts := map[string]bool{}
	for _, l := range links {
		t.Links = append(t.Links, l.Name())
		hosts[l.Host] = true
	}
	for c := 0; c < env.Clients; c++ {
		if hosts[env.ClientHost(c)] {
			t.Clients = append(t.Clients, c)
		}
	}
	for _, rep := range env.Replicas {
		if rep != nil && hosts[rep.Name] {
			t.Replicas = append(t.Replicas, rep.Name)
		}
	}
	sort.Strings(t.Replicas)
	return t
}

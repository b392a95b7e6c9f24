package exec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lockstorm/lockstorm/lockimpl"
)

// Probe starts argv once with no Redis nodes, asks hello and stops it: what
// a client declares is known before any run starts.
func Probe(ctx context.Context, argv []string) (Hello, error) {
	if len(argv) == 0 {
		return Hello{}, errors.New("empty command")
	}
	env := append(os.Environ(), "LOCKSTORM_PROTOCOL="+Protocol, "LOCKSTORM_NODES=", "LOCKSTORM_CLIENT=0",
		"LOCKSTORM_SEED=1", "PYTHONUNBUFFERED=1")
	p, err := startProc(argv, env, discard, func(p *proc, name string) { _ = p.send("go " + name) })
	if err != nil {
		return Hello{}, err
	}
	defer p.kill()
	if err := p.send("hello " + Protocol + " points=off"); err != nil {
		return Hello{}, fmt.Errorf("%s: hello: %w", strings.Join(argv, " "), err)
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	select {
	case m := <-p.msgs:
		h, err := parseHello(m)
		if err != nil {
			return Hello{}, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
		}
		return h, nil
	case <-p.exited:
		select {
		case m := <-p.msgs:
			if h, err := parseHello(m); err == nil {
				return h, nil
			}
		default:
		}
		return Hello{}, fmt.Errorf("%s: no hello reply: %s", strings.Join(argv, " "), p.deathText())
	case <-ctx.Done():
		return Hello{}, fmt.Errorf("%s: no hello reply within %v", strings.Join(argv, " "), startTimeout)
	}
}

var (
	regMu      sync.Mutex
	registered = map[string]string{} // name → command line
)

// Register probes argv and registers it as an implementation under the
// name its hello gives (or exec:<script>), so scenarios, expectations and
// reports name it like any Go lock. Registering the same command twice
// returns the first registration.
func Register(ctx context.Context, argv []string) (lockimpl.Info, error) {
	info, err := Describe(ctx, argv)
	if err != nil {
		return lockimpl.Info{}, err
	}
	regMu.Lock()
	defer regMu.Unlock()
	line := strings.Join(argv, "\x00")
	if prev, ok := registered[info.Name]; ok {
		if prev != line {
			return lockimpl.Info{}, fmt.Errorf("client name %q is taken by another command", info.Name)
		}
		return lockimpl.Lookup(info.Name)
	}
	if _, err := lockimpl.Lookup(info.Name); err == nil {
		return lockimpl.Info{}, fmt.Errorf("client name %q is a built-in implementation's", info.Name)
	}
	lockimpl.Register(info)
	registered[info.Name] = line
	return info, nil
}

// Describe probes argv and describes it without registering a name: a
// spec's exec variant runs it under the variant's name. It is the
// lockimpl.Program of every binary that links this package.
func Describe(ctx context.Context, argv []string) (lockimpl.Info, error) {
	h, err := Probe(ctx, argv)
	if err != nil {
		return lockimpl.Info{}, err
	}
	return NewInfo(argv, h), nil
}

func init() { lockimpl.RegisterPrograms(Describe) }

// NewInfo describes the client program argv, as its hello h declared it.
func NewInfo(argv []string, h Hello) lockimpl.Info {
	name := h.Name
	if name == "" {
		name = DefaultName(argv)
	}
	summary := h.Summary
	if summary == "" {
		summary = "external client process"
	}
	argv = append([]string(nil), argv...)
	return lockimpl.Info{
		Name:    name,
		Program: argv,
		Source:  "client process: " + strings.Join(argv, " "),
		Summary: summary,
		Nodes: func(o lockimpl.Options) int {
			if o.Nodes > 0 {
				return o.Nodes
			}
			return h.Nodes
		},
		Points:         h.Points,
		OwnConnections: true,
		Claims:         h.Claims,
		RedisKey:       redisKey(h.RedisKey),
		New: func(env lockimpl.Env, o lockimpl.Options) (lockimpl.Locker, error) {
			l, err := New(env, o, argv, name)
			if err != nil {
				return nil, err
			}
			l.extend, l.tellsLost = h.Extend, h.Lost
			return l, nil
		},
	}
}

// DefaultName is the name of the client program argv whose hello gives
// none: exec: and its script's (or binary's) file name.
func DefaultName(argv []string) string {
	return "exec:" + filepath.Base(argv[len(argv)-1])
}

// redisKey makes Info.RedisKey from a hello's template ("" : nil).
func redisKey(tmpl string) func(string) string {
	if tmpl == "" {
		return nil
	}
	return func(key string) string { return strings.ReplaceAll(tmpl, "{key}", key) }
}

package spec

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockstorm/lockstorm/checker"
	"github.com/lockstorm/lockstorm/lockimpl"
)

// validation is one spec's check against its YAML tree: the stages and
// checks are its methods, and bad makes each refusal at its field's line,
// so no check carries the error's making in its signature.
type validation struct {
	s   *Spec
	doc *yamlDoc
}

// validation returns the checks of s against s.doc (an empty tree, which
// places every error on line 0, for a spec built in code).
func (s *Spec) validation() *validation {
	doc := s.doc
	if doc == nil {
		doc = &yamlDoc{file: s.File}
	}
	return &validation{s: s, doc: doc}
}

// bad is the refusal of field: the file, the field's line and the message.
func (v *validation) bad(field, msg string, args ...any) error {
	return &SpecError{File: v.s.File, Line: v.doc.lineOf(field), Field: field, Msg: fmt.Sprintf(msg, args...)}
}

// validate checks every value against its field's meaning, the topology
// and the limits, and fills defaults. Fields are checked in file order of
// their kind so the first mistake reported is stable.
func (s *Spec) validate(doc *yamlDoc, lim Limits) error {
	s.doc = doc
	s.limits = lim
	v := s.validation()
	// The order of the stages is the order of the errors a user meets: the
	// shape of the fields first, then what they mean together.
	stages := []func() error{v.checkShape, v.checkTopology, v.checkBounds, v.checkWorkload, v.checkVariants, v.checkNames, v.checkFaults}
	for _, stage := range stages {
		if err := stage(); err != nil {
			return err
		}
	}
	if n := s.historyEstimate(); n > lim.MaxHistory {
		return v.bad("duration", "this run could record about %d history entries (%d clients for %v), above the limit of %d: shorten it, bound it with ops or workload.cycles, or raise --max-history", n, s.Clients, s.Duration, lim.MaxHistory)
	}
	for _, name := range s.matrix() {
		if err := s.CheckImpl(name); err != nil {
			return err
		}
	}
	return nil
}

// checkShape refuses a missing name, an unknown mode, negative durations and
// counts, and zeros written out where zero would silently mean the default.
func (v *validation) checkShape() error {
	s, doc := v.s, v.doc
	if s.Name == "" {
		return v.bad("name", "missing")
	}
	switch s.Mode {
	case "":
		s.Mode = "random"
	case "random", "scheduled":
	default:
		return v.bad("mode", "%s", enumMsg(s.Mode, "scheduled", "random"))
	}
	durs := []struct {
		f string
		d time.Duration
	}{{"duration", s.Duration}, {"client_timeout", s.ClientTimeout}, {"think", s.Think},
		{"workload.cs_min", s.Workload.CSMin}, {"workload.cs_max", s.Workload.CSMax}, {"workload.extend_every", s.Workload.ExtendEvery},
		{"network.latency", s.Network.Latency}, {"clock_skew", s.ClockSkew}, {"network.jitter", s.Network.Jitter}, {"deadlock_bound", s.DeadlockBound},
		{"wait_bound", s.WaitBound}, {"lockstep_within", s.LockstepWithin}}
	for _, d := range durs {
		if d.d < 0 {
			return v.bad(d.f, "must not be negative, got %v", d.d)
		}
	}
	ints := []struct {
		f string
		n int
	}{{"nodes", s.Nodes}, {"replicas", s.Replicas}, {"clients", s.Clients}, {"hosts", s.Hosts}, {"keys", s.Keys}, {"ops", s.Ops},
		{"workload.cycles", s.Workload.Cycles}, {"lockstep_rounds", s.LockstepRounds}}
	for _, i := range ints {
		if i.n < 0 {
			return v.bad(i.f, "must not be negative, got %d", i.n)
		}
	}
	// A zero written out where zero stands for a default would silently
	// run with the default: clients: 0 is not one client.
	for _, f := range []string{"nodes", "clients", "hosts", "keys", "duration", "client_timeout", "deadlock_bound", "wait_bound", "lockstep_within", "lockstep_rounds"} {
		if doc.has(f) && reflect.ValueOf(s.fieldValue(f)).IsZero() {
			if f == "duration" {
				return v.bad(f, "must be > 0: every run needs a time bound")
			}
			return v.bad(f, "must be > 0 (omit the field for its default)")
		}
	}
	if (s.LockstepWithin > 0) != (s.LockstepRounds > 0) {
		return v.bad(map[bool]string{true: "lockstep_within", false: "lockstep_rounds"}[s.LockstepWithin > 0],
			"lockstep_within and lockstep_rounds judge lockstep retries together: set both or neither")
	}
	if err := v.checkLockZeros("lock", s.Lock); err != nil {
		return err
	}
	if err := v.optionNegatives("lock", s.Lock); err != nil {
		return err
	}
	return nil
}

// checkWorkload checks the client loop: extends, critical sections, the
// client's kind and the resource.
func (v *validation) checkWorkload() error {
	s := v.s
	if s.Workload.ExtendEvery > 0 && s.Lock.TTL <= 0 {
		return v.bad("workload.extend_every", "extends renew to lock.ttl: set lock.ttl")
	}
	if s.Workload.CSMax < s.Workload.CSMin {
		return v.bad("workload.cs_max", "%v is below cs_min (%v)", s.Workload.CSMax, s.Workload.CSMin)
	}
	switch s.Workload.Client {
	case "":
		s.Workload.Client = Careless
	case Careless, Careful:
	default:
		return v.bad("workload.client", "%s", enumMsg(s.Workload.Client, Careful, Careless))
	}
	switch s.Workload.Resource {
	case "", "counter", "fenced":
	default:
		return v.bad("workload.resource", "%s", enumMsg(s.Workload.Resource, "counter", "fenced"))
	}
	return nil
}

// checkVariants checks that each variant runs exactly one of impl or exec,
// does not shadow an implementation, and sets no option to an invalid value.
func (v *validation) checkVariants() error {
	s, doc := v.s, v.doc
	for _, name := range slices.Sorted(maps.Keys(s.Variants)) {
		vr := s.Variants[name]
		hasExec := doc.has("variants." + name + ".exec")
		switch {
		case hasExec && vr.Impl != "":
			return v.bad("variants."+name+".exec", "a variant runs either impl (%s) or exec (a client program), not both", vr.Impl)
		case hasExec:
			if err := v.checkProgram(name, vr.Exec); err != nil {
				return err
			}
		case vr.Impl == "":
			return v.bad("variants."+name+".impl", "missing: which implementation the variant runs (or exec: [PROGRAM, ARGS...] for a client program)")
		default:
			if _, err := s.lookup(vr.Impl); err != nil {
				return v.bad("variants."+name+".impl", "%s", implMsg(vr.Impl))
			}
		}
		if _, dup := s.lookup(name); dup == nil {
			return v.bad("variants."+name, "shadows the implementation of the same name")
		}
		if err := v.checkLockZeros("variants."+name, vr.Options); err != nil {
			return err
		}
		if err := v.optionNegatives("variants."+name, vr.Options); err != nil {
			return err
		}
	}
	return nil
}

// checkNames checks every name the spec refers to: impls, clock offsets' clients,
// expected verdicts and derive rules.
func (v *validation) checkNames() error {
	s := v.s
	for i, name := range s.Impls {
		_, o, err := s.Resolve(name)
		if err != nil {
			return v.bad(fmt.Sprintf("impls.%d", i), "%s", implMsg(name))
		}
		if o.WaitReplicas > 0 && o.ReplicaTimeout >= s.ClientTimeout {
			return v.bad(fmt.Sprintf("impls.%d", i), "%s: replica_timeout %v must be below client_timeout %v (WAIT blocks the connection that long)", name, o.ReplicaTimeout, s.ClientTimeout)
		}
	}
	for _, c := range slices.Sorted(maps.Keys(s.ClockOffsets)) {
		if c < 0 || c >= s.Clients {
			return v.bad("clock_offsets."+strconv.Itoa(c), "no client %d (clients: %d, numbered from 0)", c, s.Clients)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Expected)) {
		verdict := s.Expected[name]
		if _, _, err := s.Resolve(name); err != nil {
			return v.bad("expected."+name, "%s", implMsg(name))
		}
		if !validVerdict(verdict) {
			return v.bad("expected."+name, "verdict %s", enumMsg(verdict, checker.Safe, checker.Unsafe, checker.Deadlock, checker.Inconclusive))
		}
	}
	if err := v.validateRules(); err != nil {
		return err
	}
	return nil
}

// fieldValue reads a top-level field by its YAML key.
func (s *Spec) fieldValue(key string) any {
	v := reflect.ValueOf(s).Elem()
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); name == key {
			return v.Field(i).Interface()
		}
	}
	return nil
}

// lockZeroFields are the lock options whose zero value means "the
// algorithm's default": written as zero, they are refused.
var lockZeroFields = []string{"ttl", "retry_count", "retry_delay", "wait_timeout", "nodes", "node_timeout"}

// checkLockZeros refuses a lock option written as zero where zero means
// the algorithm's default (lockZeroFields).
func (v *validation) checkLockZeros(prefix string, o lockimpl.Options) error {
	rv := reflect.ValueOf(o)
	t := rv.Type()
	for i := 0; i < t.NumField(); i++ {
		key, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		for _, z := range lockZeroFields {
			if key == z && v.doc.has(prefix+"."+key) && rv.Field(i).IsZero() {
				return v.bad(prefix+"."+key, "must be > 0 (omit the field for the algorithm's default)")
			}
		}
	}
	return nil
}

// optionNegatives refuses negative lock options where they are written.
func (v *validation) optionNegatives(prefix string, o lockimpl.Options) error {
	var base lockimpl.Info
	if err := base.CheckOptions(lockimpl.Options{TTL: o.TTL, RetryCount: o.RetryCount, RetryDelay: o.RetryDelay, WaitTimeout: o.WaitTimeout, Nodes: o.Nodes, NodeTimeout: o.NodeTimeout}, 0); err != nil {
		var oe *lockimpl.OptionError
		if errors.As(err, &oe) {
			return v.bad(prefix+"."+oe.Option, "%s", oe.Msg)
		}
		return v.bad(prefix, "%v", err)
	}
	return nil
}

// enumMsg is the message for a value outside its set, with the nearest one.
func enumMsg(got string, want ...string) string {
	msg := fmt.Sprintf("%q: want %s", got, orList(want))
	if n := nearest(got, want); n != "" {
		msg += fmt.Sprintf(" (did you mean %s?)", n)
	}
	return msg
}

func implMsg(name string) string {
	msg := fmt.Sprintf("unknown implementation %q (known: %s)", name, strings.Join(lockimpl.Names(), ", "))
	if n := nearest(name, lockimpl.Names()); n != "" {
		msg = fmt.Sprintf("unknown implementation %q (did you mean %s?)", name, n)
	}
	return msg
}

func orList(w []string) string {
	switch len(w) {
	case 0:
		return "nothing"
	case 1:
		return w[0]
	}
	return strings.Join(w[:len(w)-1], ", ") + " or " + w[len(w)-1]
}

// yamlKeys lists a struct type's YAML keys.
func yamlKeys(t reflect.Type) []string {
	var out []string
	for _, f := range yamlFields(t) {
		out = append(out, f.name)
	}
	return out
}

// Package scenarios is the runner: Compile turns a spec (package
// scenarios/spec) and a Config (the lock on trial, seed, backend) into a
// Plan holding everything a run needs, and the runner executes the plan in
// phases (topology, clients, faults, watching, traffic, finish) into a
// history, checks it (package checker) and returns an Outcome. RunMany runs
// many jobs in parallel, started through an admission gate. The runner
// reads only the plan, never the spec.
package scenarios

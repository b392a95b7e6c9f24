package main

import (
	"github.com/lockstorm/lockstorm/lockimpl"
)

func scenarioImpl(name string) (lockimpl.Info, error) { return lockimpl.Lookup(name) }

func cmdCheck(args []string) error {
	return usage("check: not implemented yet")
}

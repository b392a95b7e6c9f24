package main

import "context"

func cmdBench(ctx context.Context, args []string) error {
	return usage("bench: not built yet")
}

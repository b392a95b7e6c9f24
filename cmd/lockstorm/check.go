package main

func cmdCheck(args []string) error {
	return usage("check: not implemented yet")
}

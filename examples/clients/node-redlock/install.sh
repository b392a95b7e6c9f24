#!/bin/sh
# Installs node-redlock's packages from its committed lockfile (npm ci) when
# node_modules is missing or older than the lockfile. `make clients` and the
# client-matrix test both call it, so `go test ./...` on a fresh clone needs
# no make step first. Concurrent callers (test packages run in parallel)
# take turns on a lock of the lockfile itself.
set -eu
cd "$(dirname "$0")"
exec 9<package-lock.json
flock 9
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund --loglevel=error
  touch node_modules
fi

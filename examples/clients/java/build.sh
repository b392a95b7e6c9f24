#!/bin/sh
# Compiles the Java client processes (seed 001's RedisLock and its protocol
# and RESP helpers) into build/java at the repository's root when a source is
# newer than the classes. `make clients` and the client-matrix test both call
# it, so `go test ./...` on a fresh clone needs no make step first.
# Concurrent callers (test packages run in parallel) take turns on a lock.
set -eu
src=$(cd "$(dirname "$0")" && pwd)
out=$src/../../../build/java
mkdir -p "$out"
exec 9>"$out/.lock"
flock 9
stamp=$out/Seed001RedisLock.class
if [ ! -f "$stamp" ] || [ -n "$(find "$src" -name '*.java' -newer "$stamp")" ]; then
  javac -encoding UTF-8 -XDstringConcat=inline -d "$out" "$src"/*.java
fi

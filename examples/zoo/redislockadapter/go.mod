module github.com/lockstorm/lockstorm/examples/zoo/redislockadapter

go 1.26.8

replace github.com/lockstorm/lockstorm => ../../..

// The oldest release the zoo pins: each release's module requires its own,
// and minimal version selection picks the higher one there.
require (
	github.com/bsm/redislock v0.8.2
	github.com/lockstorm/lockstorm v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/go-redis/redis/v9 v9.0.0-rc.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

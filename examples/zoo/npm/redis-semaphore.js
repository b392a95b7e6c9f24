// npm redis-semaphore 5.8.0 on ioredis 5, as a lockstorm client process:
//   node redis-semaphore.js mutex          one node: Mutex
//   node redis-semaphore.js redlock NODES  RedlockMutex on NODES masters
// Called as its README shows: new Mutex(client, key, options),
// acquire(), release(); options are the library's defaults (refresh every
// 0.8 × lockTimeout, retryInterval 10 ms) but lockTimeout (the scenario's
// ttl), acquireTimeout (its wait_timeout) and retryInterval (retry_delay).
// Claims, from its README: SET NX PX with a random identifier, a compare-
// and-delete release, the lock refreshed automatically while held
// (renewal), no fencing. It renews every refreshInterval, by default
// lockTimeout * 0.8 (lib/Lock.js 45, 48; README 37: "refreshInterval =
// lockTimeout * 0.8"), on a setInterval (lib/Lock.js 113), Mutex and
// RedlockMutex alike (both a Lock): renewal_every=0.8. The key is the
// library's "mutex:" + the harness's key: it cannot be told otherwise, so
// the hello declares it (redis_key).
// onLockLost is the library's lost-lock signal: told to the harness as
// "lost TOKEN" (the library's default throws from a timer and kills the
// process).
//
// release() returns nothing, whether it deleted the key or not: answered
// "unknown".
"use strict";
const Redis = require("ioredis");
const { Mutex, RedlockMutex } = require("redis-semaphore");
const { serve, env, ioredisClients, hello, version, lockName, lost, Definite, Leases } = require("./protocol");

const kind = process.argv[2] || "mutex";
const n = kind === "redlock" ? Number(process.argv[3] || 3) : 1;
const v = version("redis-semaphore");
const clients = ioredisClients(Redis, n);
// The identifier is the lock's own (a UUID) but made here, so that the
// onLockLost of this lease can name it.
const options = (identifier) => ({
  lockTimeout: env("TTL_MS", 10000),
  acquireTimeout: env("WAIT_TIMEOUT_MS", 10000),
  retryInterval: env("RETRY_DELAY_MS", 10),
  identifier,
  onLockLost: () => lost(identifier),
});
const leases = new Leases();

serve({
  hello: hello(lockName(kind === "redlock" ? "redis-semaphore-redlock" : "redis-semaphore", n, v),
    `npm redis-semaphore ${v} ${kind === "redlock" ? "RedlockMutex" : "Mutex"} (ioredis), ${n} node(s)`, {
      nodes: n, topology: n > 1 ? "quorum" : "single", expiry: "server", release: "owner-checked", renewal: true,
      renewal_every: 0.8, lost: true, redis_key: encodeURIComponent("mutex:{key}"),
    }),
  async acquire(key) {
    const id = require("node:crypto").randomUUID();
    const m = kind === "redlock" ? new RedlockMutex(clients, key, options(id)) : new Mutex(clients[0], key, options(id));
    if (!(await m.tryAcquire())) throw new Definite("acquire timed out");
    leases.set(m.identifier, m);
    return { token: m.identifier };
  },
  async release(_key, token) {
    return leases.release(token, async (m) => {
      await m.release();
      return undefined; // "unknown"
    });
  },
  close: () => clients.forEach((c) => c.disconnect()),
});

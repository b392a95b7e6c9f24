// npm redis-semaphore 5.8.0 on ioredis 5, as a lockstorm client process:
//   node redis-semaphore.js mutex          one node: Mutex
//   node redis-semaphore.js redlock NODES  RedlockMutex on NODES masters
// Called as its README shows: new Mutex(client, key, options),
// acquire(), release(); options are the library's defaults (refresh every
// 0.8 × lockTimeout, retryInterval 10 ms) but lockTimeout (the scenario's
// ttl), acquireTimeout (its wait_timeout) and retryInterval (retry_delay).
// Claims, from its README: SET NX PX with a random identifier, a compare-
// and-delete release, the lock refreshed automatically while held
// (renewal), no fencing. The key is the library's "mutex:" + the harness's
// key: it cannot be told otherwise. onLockLost is the library's lost-lock
// signal; the protocol has no message for it, so it is logged on stderr
// (the default throws from a timer and kills the process).
//
// release() returns nothing, whether it deleted the key or not: its
// answer is an unknown outcome.
"use strict";
const Redis = require("ioredis");
const { Mutex, RedlockMutex } = require("redis-semaphore");
const { serve, env, nodes, hello, version, lockName, Definite, Leases } = require("./protocol");

const kind = process.argv[2] || "mutex";
const n = kind === "redlock" ? Number(process.argv[3] || 3) : 1;
const v = version("redis-semaphore");
const clients = nodes(n).map((a) => {
  const c = new Redis({ ...a, commandTimeout: 1000, connectTimeout: 1000, maxRetriesPerRequest: 0 });
  c.on("error", () => {});
  return c;
});
const options = () => ({
  lockTimeout: env("TTL_MS", 10000),
  acquireTimeout: env("WAIT_TIMEOUT_MS", 10000),
  retryInterval: env("RETRY_DELAY_MS", 10),
  onLockLost: (e) => process.stderr.write(`lock lost: ${e.message}\n`),
});
const leases = new Leases();

serve({
  hello: hello(lockName(kind === "redlock" ? "redis-semaphore-redlock" : "redis-semaphore", n, v),
    `npm redis-semaphore ${v} ${kind === "redlock" ? "RedlockMutex" : "Mutex"} (ioredis), ${n} node(s)`, {
      nodes: n, topology: n > 1 ? "quorum" : "single", expiry: "server", release: "owner-checked", renewal: true,
    }),
  async acquire(key) {
    const m = kind === "redlock" ? new RedlockMutex(clients, key, options()) : new Mutex(clients[0], key, options());
    if (!(await m.tryAcquire())) throw new Definite("acquire timed out");
    leases.set(m.identifier, m);
    return { token: m.identifier };
  },
  async release(_key, token) {
    const m = leases.take(token);
    leases.delete(token);
    await m.release();
    return undefined;
  },
  close: () => clients.forEach((c) => c.disconnect()),
});

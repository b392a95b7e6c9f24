// npm simple-redis-mutex 3.0.0 on node-redis 5 (its peer dependency), as a
// lockstorm client process:   node simple-redis-mutex.js
// Called as its README shows: release = await lock(redis, name, {timeout,
// pollingInterval, failAfter}), release.fencingToken, await release().
// Options are the library's defaults (timeout 30 s, pollingInterval 10 s,
// failAfter unset: wait forever) but the scenario's ttl (timeout),
// retry_delay (pollingInterval: the polling that finds an expired lock; a
// release wakes the waiters through pub/sub) and wait_timeout (failAfter,
// 10 s unset, as the harness waits that long).
// Claims, from its README and dist/index.js: SET NX PX with a random value
// (tryLock), a release that deletes only while the key holds that value
// (releaseScript), a fencing token from INCR on one global counter, taken
// right after the SET NX (tryLock), no automatic renewal: one node, expiry
// on the server, owner-checked release, fencing. The key is
// "@simple-redis-mutex:lock-" + the name (getLockKey): the hello declares
// it. release() returns nothing: answered "unknown". refreshTimeout()
// (GET, then PEXPIRE) returns nothing whether it extended or not, so the
// client offers no extend.
//
// lock() does not catch its attempts' errors (attempt() calls tryLock with
// no catch): a Redis error while waiting is an unhandled rejection, which
// ends the process under node's default, as it would the user's.
"use strict";
const { createClient } = require("redis");
const { lock } = require("simple-redis-mutex");
const { serve, env, nodes, hello, version, lockName, Leases } = require("./protocol");

const v = version("simple-redis-mutex");
// No node: only the hello is asked for (the harness describing the lock).
const { host, port } = nodes(1)[0] || {};
// commandOptions.timeout bounds every command as ioredis's commandTimeout
// does for the other clients; the library's subscriber is a duplicate.
const client = createClient({ socket: { host, port, connectTimeout: 1000 }, commandOptions: { timeout: 1000 } });
client.on("error", () => {});
const ready = host ? client.connect().catch(() => {}) : null;
const leases = new Leases();
let next = 0;

serve({
  hello: hello(lockName("simple-redis-mutex", 1, v), `npm simple-redis-mutex ${v} (node-redis 5), 1 node`, {
    nodes: 1, topology: "single", expiry: "server", release: "owner-checked", fencing: true,
    redis_key: encodeURIComponent("@simple-redis-mutex:lock-{key}"),
  }),
  async acquire(key) {
    await ready;
    const release = await lock(client, key, {
      timeout: env("TTL_MS", 30000), pollingInterval: env("RETRY_DELAY_MS", 10000), failAfter: env("WAIT_TIMEOUT_MS", 10000),
    });
    const token = `${process.pid}-${++next}`;
    leases.set(token, release);
    return { token, fence: release.fencingToken };
  },
  async release(_key, token) {
    return leases.release(token, async (release) => {
      await release();
      return undefined; // "unknown"
    });
  },
  // failAfter's rejection: the library stopped trying.
  definite: (err) => /could not be acquired after/.test(String(err && err.message)),
  close: () => host && client.close(),
});

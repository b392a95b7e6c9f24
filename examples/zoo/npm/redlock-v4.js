// npm redlock 4.2.0 (npm's `latest` tag) on ioredis 5, as a lockstorm
// client process:   node redlock-v4.js [NODES]
// Called as its README shows: new Redlock(clients, settings),
// redlock.lock(resource, ttl), lock.unlock(), lock.extend(ttl). Settings are
// the library's defaults (driftFactor 0.01, retryCount 10, retryDelay
// 200 ms, retryJitter 200 ms) but retryCount and retryDelay, which the
// scenario may set; the ttl is the scenario's (10 s unset). Claims, from the
// README: Redlock on N independent masters, a random value, compare-and-
// delete release, no fencing, no automatic extension. Its validity check
// runs on one node too and reads the wall clock: `_lock` dates a try
// `const start = Date.now()` (redlock.js 397) and grants only
// `if(votes >= quorum && lock.expiration > Date.now())` (419), expiration
// being start + ttl - drift: grant_checked, not grant_monotonic (a step of
// the wall clock during the try misleads it). extend_checked: a lock's
// expiration is start + ttl - drift, start taken before its commands, and
// extend goes through the same _lock, which grants only while that
// expiration is ahead (redlock.js 294-307, 397-419).
//
// Its errors are all LockError, whether the nodes said no or did not
// answer (clientError events carry the latter): so a refused lock, unlock
// or extend is an unknown outcome here, never a definite no.
"use strict";
const Redis = require("ioredis");
const Redlock = require("redlock-4.2.0");
const { serve, env, ioredisClients, hello, version, lockName, Leases } = require("./protocol");

const n = Number(process.argv[2] || 1);
const v = version("redlock-4.2.0");
const clients = ioredisClients(Redis, n);
const redlock = clients.length
  ? new Redlock(clients, { retryCount: env("RETRY_COUNT", 10), retryDelay: env("RETRY_DELAY_MS", 200) })
  : null;
if (redlock) redlock.on("clientError", () => {});
const leases = new Leases();

serve({
  hello: hello(lockName("redlock", n, v), `npm redlock ${v} (ioredis), ${n} node(s)`, {
    nodes: n, topology: n > 1 ? "quorum" : "single", expiry: "server", release: "owner-checked", extend: true,
    grant_checked: true,
    extend_checked: true,
  }),
  async acquire(key) {
    const lock = await redlock.lock(key, env("TTL_MS", 10000));
    leases.set(lock.value, lock);
    return { token: lock.value, validity: lock.expiration - Date.now() };
  },
  async release(_key, token) {
    return leases.release(token, async (lock) => {
      await lock.unlock();
      return true;
    });
  },
  async extend(_key, token, ttl) {
    const ext = await leases.take(token).extend(ttl);
    leases.set(token, ext);
    return { validity: ext.expiration - Date.now() };
  },
  close: () => clients.forEach((c) => c.disconnect()),
});

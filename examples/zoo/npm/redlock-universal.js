// npm redlock-universal 0.8.5 on ioredis 5, as a lockstorm client process:
//   node redlock-universal.js          SimpleLock on one node (createLock)
//   node redlock-universal.js NODES    RedLock on NODES masters (createRedlock)
// Called as its README's "Manual Control" shows: one lock object per key
// (created on first use and kept, as the README's createLock({adapter,
// key, ttl}) is), handle = await lock.acquire(), lock.extend(handle, ttl),
// lock.release(handle). Options are the library's defaults (retryAttempts
// 3, retryDelay 100 ms or 200 ms for RedLock, the circuit breaker on,
// clockDriftFactor 0.01, quorum N/2+1) but the scenario's ttl,
// retry_count and retry_delay. using() (auto-extension) is not used.
// Claims, from the README ("Redlock: Provides Consensus. Locks are safe
// even if nodes crash") and dist/index.cjs: SET NX PX with a random value
// (SimpleLock.acquire, RedLock.acquireOnSingleNode), a compare-and-delete
// release and a compare-and-pexpire extend (DELETE_IF_MATCH_SCRIPT,
// EXTEND_IF_MATCH_SCRIPT), RedLock granting only on a quorum within the
// ttl less the drift (attemptLockAcquisition): expiry on the server,
// owner-checked release, extend, no fencing. A handle carries no validity
// (acquiredAt is taken after the grant), so none is reported. RedLock's
// check reads the wall clock: attemptLockAcquisition takes `startTime =
// Date.now()` and refuses when `Date.now() - startTime` plus the drift
// reaches the ttl (dist/index.cjs 1172, 1193-1196): grant_checked, not
// grant_monotonic. SimpleLock.acquire grants on SET's OK with no check
// (dist/index.cjs 809-813).
//
// SimpleLock's release and extend answer false only when the script found
// the key not ours: a definite no. RedLock's false also counts nodes that
// did not answer (RedLock.release, RedLock.extend), so it is unknown.
"use strict";
const Redis = require("ioredis");
const rl = require("redlock-universal");
const { serve, env, ioredisClients, hello, version, lockName, Definite, Leases } = require("./protocol");

const n = Number(process.argv[2] || 1);
const v = version("redlock-universal");
const adapters = ioredisClients(Redis, n).map((c) => new rl.IoredisAdapter(c));
const locks = new Map();
const lockFor = (key) => {
  if (!locks.has(key)) {
    const o = { key, ttl: env("TTL_MS", 30000) };
    if (env("RETRY_COUNT", 0)) o.retryAttempts = env("RETRY_COUNT", 0);
    if (env("RETRY_DELAY_MS", 0)) o.retryDelay = env("RETRY_DELAY_MS", 0);
    locks.set(key, n > 1 ? rl.createRedlock({ adapters, ...o }) : rl.createLock({ adapter: adapters[0], ...o }));
  }
  return locks.get(key);
};
const leases = new Leases();
// no is the answer to a false from release or extend (see above).
const no = (what) => {
  if (n > 1) throw new Error(`${what}: no quorum (some nodes may not have answered)`);
  return false;
};

serve({
  hello: hello(lockName("redlock-universal", n, v), `npm redlock-universal ${v} ${n > 1 ? "RedLock" : "SimpleLock"} (ioredis), ${n} node(s)`, {
    nodes: n, topology: n > 1 ? "quorum" : "single", expiry: "server", release: "owner-checked", extend: true,
    ...(n > 1 ? { grant_checked: true } : {}),
  }),
  async acquire(key) {
    const handle = await lockFor(key).acquire();
    leases.set(handle.value, handle);
    return { token: handle.value };
  },
  async release(key, token) {
    return leases.release(token, async (handle) => (await lockFor(key).release(handle)) || no("release"));
  },
  async extend(key, token, ttl) {
    return (await lockFor(key).extend(leases.take(token), ttl)) ? {} : no("extend");
  },
  // SimpleLock's acquire refused because the key was held on every attempt
  // ("already held" stays its cause only when no attempt erred) or by its
  // open circuit breaker (nothing sent) is a definite no; RedLock's cause
  // ("quorum not achieved") does not say whether the nodes answered.
  definite: (err) => err instanceof rl.LockAcquisitionError && /already held|^Circuit breaker/.test(String(err.cause && err.cause.message)),
  close: () => adapters.forEach((a) => a.disconnect()),
});

// npm redlock 5.0.0-beta.2, or its maintained fork @sesamecare-oss/redlock
// (same API), on ioredis 5, as a lockstorm client process:
//   node redlock-v5.js PACKAGE [NODES]
// PACKAGE: redlock-5.0.0-beta.2 (npm alias) or @sesamecare-oss/redlock.
// Called as the README shows: new Redlock(clients, settings),
// acquire([key], duration), release(lock), lock.extend(duration). Settings
// are the library's defaults but retryCount and retryDelay, which the
// scenario may set; the duration is the scenario's ttl (10 s unset).
// Claims, from the README: Redlock on N independent masters (one is a
// single instance), SET NX PX with a random value, compare-and-delete
// release, no fencing, no automatic extension (acquire/release; `using`
// extends, not used here). extend_checked: acquire and extend date the
// lock's expiration from a start taken before their commands (start +
// duration - drift: dist/cjs/index.js 210-217, 246-262 in 5.0.0-beta.2;
// build/index.js 146-156, 185-200 in the fork), the validity the client
// tells; a grant past it is issue 299 (grant-after-ttl), not this claim.
"use strict";
const Redis = require("ioredis");
const { serve, env, ioredisClients, hello, version, lockName, Leases } = require("./protocol");

const pkg = process.argv[2];
const n = Number(process.argv[3] || 1);
const lib = require(pkg);
// redlock 5 exports the class as default, the fork as Redlock.
const Redlock = lib.default || lib.Redlock;
const { ResourceLockedError, ExecutionError } = lib;
const clients = ioredisClients(Redis, n);
const redlock = clients.length
  ? new Redlock(clients, { retryCount: env("RETRY_COUNT", 10), retryDelay: env("RETRY_DELAY_MS", 200) })
  : null;
if (redlock) redlock.on("error", () => {}); // every "against" vote is emitted here
const leases = new Leases();
const v = version(pkg);
const name = lockName(pkg.startsWith("@sesamecare-oss/") ? "sesamecare-redlock" : "redlock", n, v);

serve({
  hello: hello(name, `npm ${pkg.replace(/-\d.*$/, "")} ${v} (ioredis), ${n} node(s)`, {
    nodes: n, topology: n > 1 ? "quorum" : "single", expiry: "server", release: "owner-checked", extend: true,
    extend_checked: true,
  }),
  async acquire(key) {
    const lock = await redlock.acquire([key], env("TTL_MS", 10000));
    leases.set(lock.value, lock);
    return { token: lock.value, validity: lock.expiration - Date.now() };
  },
  async release(_key, token) {
    return leases.release(token, async (lock) => {
      await redlock.release(lock);
      return true;
    });
  },
  async extend(_key, token, ttl) {
    const ext = await leases.take(token).extend(ttl);
    leases.set(token, ext);
    return { validity: ext.expiration - Date.now() };
  },
  // A quorum that said no only because the key was someone else's is a
  // definite no; a vote lost to a timeout or a dead link may have landed.
  async definite(err) {
    if (!(err instanceof ExecutionError)) return false;
    const stats = await Promise.all(err.attempts);
    return stats.every((s) => [...s.votesAgainst.values()].every((e) => e instanceof ResourceLockedError));
  },
  close: () => clients.forEach((c) => c.disconnect()),
});

// npm ioredis-lock 4.0.0 on ioredis 4 (its peer dependency, ~4.x), as a
// lockstorm client process:   node ioredis-lock.js
// Called as its README shows: createLock(client, {timeout, retries,
// delay}), lock.acquire(key), lock.release(), lock.extend(ttl), one Lock
// per lease (a Lock holds one key at a time). Options are the library's
// defaults (retries 0, delay 50 ms) but the scenario's ttl (timeout),
// retry_count and retry_delay.
// Claims, from the README's Implementation section, which lib/lock.js
// keeps: `SET key uuid PX timeout NX` (_attemptLock), a release that
// deletes only while the key holds the lock's uuid (delifequal in
// lib/scripts.js) and an extend that PEXPIREs only then (pexpireifequal):
// one node, expiry on the server, owner-checked release, extend, no
// fencing, no automatic renewal.
//
// Its errors wrap Redis errors in the same classes as its refusals: only
// the messages of its own refusals ("Could not acquire", "had expired",
// and "has not been acquired" for a lock a failed extend let go) are
// definite noes; anything else is an unknown outcome.
"use strict";
const Redis = require("ioredis-4");
const redislock = require("ioredis-lock");
const { serve, env, ioredisClients, hello, version, lockName, Leases } = require("./protocol");

const v = version("ioredis-lock");
const [client] = ioredisClients(Redis, 1);
const leases = new Leases();
const refused = /^Could not acquire lock on |had expired$|^Lock has not been acquired$/;

serve({
  hello: hello(lockName("ioredis-lock", 1, v), `npm ioredis-lock ${v} (ioredis 4), 1 node`, {
    nodes: 1, topology: "single", expiry: "server", release: "owner-checked", extend: true,
  }),
  async acquire(key) {
    const lock = redislock.createLock(client, {
      timeout: env("TTL_MS", 10000), retries: env("RETRY_COUNT", 0), delay: env("RETRY_DELAY_MS", 50),
    });
    await lock.acquire(key);
    leases.set(lock._id, lock); // _id is the uuid the key holds
    return { token: lock._id };
  },
  async release(_key, token) {
    return leases.release(token, async (lock) => {
      await lock.release();
      return true;
    });
  },
  async extend(_key, token, ttl) {
    await leases.take(token).extend(ttl);
    return {};
  },
  definite: (err) => err instanceof redislock.LockAcquisitionError || err instanceof redislock.LockReleaseError ||
    err instanceof redislock.LockExtendError ? refused.test(err.message) : false,
  close: () => client && client.disconnect(),
});

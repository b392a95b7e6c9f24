// npm redis-lock 1.0.0 on node-redis 4 (the client its README requires),
// as a lockstorm client process:   node redis-lock.js
// Called as its README shows: lock = require("redis-lock")(client,
// retryDelay), done = await lock(name, timeout), await done(). Options are
// the library's defaults (retryDelay 50 ms, timeout 5 s) but the scenario's
// retry_delay and ttl.
// Claims, from the README ("not possible for two functions to acquire the
// same lock at any point in time, except if the timeout is breached";
// done() "releases the lock (or do nothing if timeout has already released
// it)") and index.js: SET NX PX (acquireLock), whose value is the expiry
// time, not a token; done() DELs the key, unconditionally, only while the
// holder's own clock says the timeout has not passed: one node, expiry on
// the server, a time-checked release, no extend, no fencing. The key is
// "lock." + the lock's name (index.js, lock()): the hello declares it.
//
// lock() never gives up: it retries every retryDelay until it wins, errors
// included, and cannot be stopped. The harness waits wait_timeout (10 s
// unset) for an acquire; past it the client answers "error" (unknown) and,
// as a caller that stopped waiting would, releases the lock its abandoned
// call takes later. done()'s documented answer is nothing: a release is
// answered "unknown".
"use strict";
const { createClient } = require("redis-4");
const redisLock = require("redis-lock");
const { serve, env, nodes, hello, version, lockName, Leases } = require("./protocol");

const v = version("redis-lock");
// No node: only the hello is asked for (the harness describing the lock).
const { host, port } = nodes(1)[0] || {};
const client = createClient({ socket: { host, port, connectTimeout: 1000 } });
client.on("error", () => {}); // it reconnects on its own
const ready = host ? client.connect().catch(() => {}) : null;
const lock = redisLock(client, env("RETRY_DELAY_MS", 50));
const leases = new Leases();
let next = 0;

serve({
  hello: hello(lockName("redis-lock", 1, v), `npm redis-lock ${v} (node-redis 4), 1 node`, {
    nodes: 1, topology: "single", expiry: "server", release: "time-checked",
    redis_key: encodeURIComponent("lock.{key}"),
  }),
  async acquire(key) {
    await ready;
    let timer;
    const wait = env("WAIT_TIMEOUT_MS", 10000);
    const call = lock(key, env("TTL_MS", 5000));
    const gaveUp = new Promise((_, reject) => {
      timer = setTimeout(() => {
        call.then((done) => done()).catch(() => {});
        reject(new Error(`not acquired in ${wait} ms; the library keeps trying: a late grant is released`));
      }, wait);
    });
    const done = await Promise.race([call, gaveUp]);
    clearTimeout(timer);
    const token = `${process.pid}-${++next}`;
    leases.set(token, done);
    return { token };
  },
  async release(_key, token) {
    return leases.release(token, async (done) => {
      await done();
      return undefined; // "unknown"
    });
  },
  close: () => host && client.disconnect(),
});

// npm node-redis-warlock 1.0.2 on ioredis 5, as a lockstorm client
// process:   node warlock.js
// Called as its README shows (README.md 19-80): Warlock(redis), then
// optimistic(key, ttl, maxAttempts, wait, cb) to wait for the lock (55),
// unlock(key, id, cb) with `result == 1` as "unlocked successfully"
// (67-70), touch(key, id, ttl, cb) to extend (78-80). optimistic's
// callback gets no id (lib/warlock.js 101, cb(err, unlock)), so the
// lock() it calls is wrapped to note the id of the try that won (the id
// lock() passes its own callback, 54). The README asks for a client
// "compatible with v0.10" of node-redis (10): ioredis's callback API is,
// and gives the 1 s command timeout the other clients have (protocol.js).
// Options: the scenario's ttl, retry_delay as optimistic's wait (README's
// example: 1000 ms) and wait_timeout / wait as maxAttempts.
// Claims, from the README and lib/: `SET key:lock id PX ttl NX`
// (warlock.js 47-56: one node, expiry on the server), a compare-and-delete
// release (lua/parityDel.lua) and a compare-and-SET-XX extend
// (lua/parityRelock.lua): owner-checked, extend, no fencing, no renewal.
// The key is the harness's key + ":lock" (makeKey, 27-29): declared.
//
// touch's answer: the README reads only err (78-80), so no err is a yes,
// but a 0 from the script, which says the key is not ours, is a no.
// node-redis-script's runScript (src/index.js 39-53) catches every error
// but NOSCRIPT and returns undefined: a touch or unlock whose reply was
// lost calls back (null, undefined), no err. unlock's undefined is not
// `== 1`: answered unknown, as a user cannot tell it from anything.
"use strict";
const Redis = require("ioredis");
const Warlock = require("node-redis-warlock");
const { serve, env, ioredisClients, hello, version, lockName, Definite } = require("./protocol");

const v = version("node-redis-warlock");
const [client] = ioredisClients(Redis, 1);
// The lock's id is 16 bytes in base64 (warlock.js 44-46), "==" at its end,
// and a protocol token cannot hold "=" (it reads as an attribute): the id
// goes to Redis without its padding, in SET and in both scripts alike (they
// only compare it for equality, so no decision changes), and the harness
// is told the value the servers hold.
const unpad = (a) => (typeof a === "string" && /^[A-Za-z0-9+/]{22}==$/.test(a) ? a.slice(0, 22) : a);
for (const m of ["set", "evalsha"]) {
  if (!client) break;
  const f = client[m].bind(client);
  client[m] = (...args) => f(...args.map(unpad));
}
const warlock = Warlock(client);
let lastId;
const lock = warlock.lock;
warlock.lock = (key, ttl, cb) => lock(key, ttl, (err, unlock, id) => {
  if (unlock) lastId = unpad(id);
  cb(err, unlock, id);
});
const call = (f, ...args) => new Promise((resolve, reject) =>
  f(...args, (err, result) => (err ? reject(err) : resolve(result))));

serve({
  hello: hello(lockName("warlock", 1, v), `npm node-redis-warlock ${v} (ioredis 5), 1 node`, {
    nodes: 1, topology: "single", expiry: "server", release: "owner-checked", extend: true,
    redis_key: encodeURIComponent("{key}:lock"),
  }),
  async acquire(key) {
    const wait = env("RETRY_DELAY_MS", 1000);
    const attempts = Math.max(1, Math.ceil(env("WAIT_TIMEOUT_MS", 10000) / wait));
    lastId = undefined;
    try {
      await call(warlock.optimistic, key, env("TTL_MS", 10000), attempts, wait);
    } catch (e) {
      if (e.maxAttempts !== undefined) throw new Definite(e.message); // every try was refused
      throw e;
    }
    return { token: lastId };
  },
  async release(key, token) {
    const r = await call(warlock.unlock, key, token); // unpadded: the wrapper leaves it so
    if (r === 1) return true;
    if (r === 0) return false;
    return undefined; // the library swallowed an error: unknown
  },
  async extend(key, token, ttl) {
    const r = await call(warlock.touch, key, token, ttl);
    if (r === 0) return false;
    return {};
  },
  close: () => client && client.disconnect(),
});

// node-redlock (npm redlock 5.0.0-beta.2, ioredis 5) as a lockstorm client
// process, called as its README shows: new Redlock(clients, settings),
// redlock.acquire([key], duration), redlock.release(lock). Usage:
//   node redlock.js [NODES]     NODES: how many Redis masters (default 1)
// Why 5.0.0-beta.2 and not 4.2.0 (npm's `latest`): v5 is the line the
// maintainers develop and the README on the project's default branch
// documents (acquire/release/using, TypeScript); new users copy that API.
// Settings are the library's defaults (retryCount 10, retryDelay 200 ms,
// retryJitter 100 ms, driftFactor 0.01) unless the scenario sets retry_count,
// retry_delay; the lock duration is the scenario's ttl (10 s when unset).
// Grammar: ../PROTOCOL.md. No failpoints: the library has none.
"use strict";
const readline = require("node:readline");
const Redis = require("ioredis");
const { default: Redlock, ResourceLockedError, ExecutionError } = require("redlock");

const nodes = Number(process.argv[2] || 1);
// A scenario may give more masters than the lock uses (redlock specs run 5):
// a 1-node Redlock locks on the first only, as set-nx-px does.
const addrs = (process.env.LOCKSTORM_NODES || "").split(",").filter(Boolean).slice(0, nodes);
const env = (k, d) => Number(process.env["LOCKSTORM_" + k] || 0) || d;
const duration = env("TTL_MS", 10000);
const clients = addrs.map((a) => {
  const [host, port] = a.split(":");
  const c = new Redis({ host, port: Number(port), commandTimeout: 1000, connectTimeout: 1000, maxRetriesPerRequest: 0 });
  c.on("error", () => {}); // reconnects on its own; failed commands reject
  return c;
});
const redlock = clients.length
  ? new Redlock(clients, { retryCount: env("RETRY_COUNT", 10), retryDelay: env("RETRY_DELAY_MS", 200) })
  : null;
if (redlock) redlock.on("error", () => {}); // every "against" vote is emitted here
const held = new Map(); // lock value → Lock

const say = (line) => process.stdout.write(line + "\n");
const oneLine = (e) => String((e && e.message) || e).replace(/\s+/g, " ");

// A quorum that said no only because the key was someone else's is a
// definite no; a vote lost to a timeout or a dead link may still have landed.
async function definite(err) {
  if (!(err instanceof ExecutionError)) return false;
  const stats = await Promise.all(err.attempts);
  return stats.every((s) => [...s.votesAgainst.values()].every((e) => e instanceof ResourceLockedError));
}

async function handle(f) {
  switch (f[0]) {
    case "hello":
      return `hello 1 name=node-redlock-${nodes} nodes=${nodes} summary=npm%20redlock%205.0.0-beta.2%20(ioredis),%20${nodes}%20node(s) ` +
        `topology=${nodes > 1 ? "quorum" : "single"} expiry=server release=owner-checked extend=true`;
    case "acquire": {
      const lock = await redlock.acquire([f[1]], duration);
      held.set(lock.value, lock);
      return `ok ${lock.value} validity=${Math.max(0, lock.expiration - Date.now())}`;
    }
    case "release": {
      const lock = held.get(f[2]);
      if (!lock) return "fail unknown lock value";
      held.delete(f[2]);
      await redlock.release(lock);
      return "ok";
    }
    case "extend": {
      // lock.extend(duration) runs redlock's compare-and-pexpire on every
      // node and needs a quorum, like acquire; it returns the extended Lock.
      const lock = held.get(f[2]);
      if (!lock) return "fail unknown lock value";
      const ext = await lock.extend(Number(f[3]));
      held.set(ext.value, ext);
      return `ok validity=${Math.max(0, ext.expiration - Date.now())}`;
    }
  }
  return "error unknown request " + f[0];
}

(async () => {
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const f = line.trim().split(" ");
    try {
      say(await handle(f));
    } catch (e) {
      say(((await definite(e)) ? "fail " : "error ") + oneLine(e));
    }
  }
  clients.forEach((c) => c.disconnect());
})();

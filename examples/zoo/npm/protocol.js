// One lockstorm client process (examples/clients/PROTOCOL.md) around one
// lock library: every npm client of the zoo is a hello line and four
// functions given to serve(). Requests are answered one at a time, in
// order, as the harness sends them.
"use strict";
const readline = require("node:readline");

// env reads a scenario option (LOCKSTORM_TTL_MS, ...); 0 or empty is the
// library's own default d.
const env = (k, d) => Number(process.env["LOCKSTORM_" + k] || 0) || d;

// nodes are the Redis masters, each through this client's own proxy; a
// scenario may give more than the lock uses.
const nodes = (n) =>
  (process.env.LOCKSTORM_NODES || "").split(",").filter(Boolean).slice(0, n).map((a) => {
    const i = a.lastIndexOf(":");
    return { host: a.slice(0, i), port: Number(a.slice(i + 1)) };
  });

// ioredisClients are one client of the ioredis class Redis (the zoo has
// ioredis 4 and 5) per node, as every ioredis-based client here makes them:
// a command fails after 1 s and is not retried by ioredis, which
// reconnects on its own; failures surface on the commands, not as events.
const ioredisClients = (Redis, n) =>
  nodes(n).map((a) => {
    const c = new Redis({ ...a, commandTimeout: 1000, connectTimeout: 1000, maxRetriesPerRequest: 0 });
    c.on("error", () => {});
    return c;
  });

// hello is the hello line: name, summary (spaces allowed) and claims.
const hello = (name, summary, claims) =>
  `hello 1 name=${name} summary=${encodeURIComponent(summary)} ` +
  Object.entries(claims).map(([k, v]) => `${k}=${v}`).join(" ");

// version is an installed package's version (its package.json, read from
// disk: some packages do not export it).
const version = (pkg) =>
  JSON.parse(require("node:fs").readFileSync(require("node:path").join(__dirname, "node_modules", pkg, "package.json"), "utf8")).version;

// lockName is the name tables show: LIB[-NODES]@VERSION, as the Go zoo's.
const lockName = (lib, n, v) => `${lib}${n > 1 ? "-" + n : ""}@${v}`;

const oneLine = (e) => String((e && e.message) || e).replace(/\s+/g, " ").trim() || "error";

// Definite is thrown (or returned as the rejection) for an answer that is
// a definite no: the library heard from the servers that the key was not
// ours. Anything else thrown is an unknown outcome.
class Definite extends Error {}

// serve answers the harness. lib: {hello: string, acquire(key) → {token,
// fence?, validity?}, release(key, token) → true | false | undefined, extend?(key,
// token, ttlMs) → {validity?} | false, definite?(err) → bool, close?()}.
// release's false is a definite no, undefined a library that says nothing
// (unknown). A token names the lease the library handed out.
function serve(lib) {
  const say = (line) => process.stdout.write(line + "\n");
  const answer = async (f) => {
    switch (f[0]) {
      case "hello":
        return lib.hello;
      case "acquire": {
        const { token, fence, validity } = await lib.acquire(f[1]);
        return `ok ${token}` + (fence !== undefined ? ` fence=${fence}` : "") +
          (validity > 0 ? ` validity=${Math.round(validity)}` : "");
      }
      case "release": {
        const r = await lib.release(f[1], f[2]);
        if (r === true) return "ok";
        if (r === false) return "fail not ours";
        return "unknown release returned nothing";
      }
      case "extend": {
        if (!lib.extend) return "error extend not supported";
        const r = await lib.extend(f[1], f[2], Number(f[3]));
        if (r === false) return "fail not ours";
        return "ok" + (r && r.validity > 0 ? ` validity=${Math.round(r.validity)}` : "");
      }
    }
    return "error unknown request " + f[0];
  };
  (async () => {
    const rl = readline.createInterface({ input: process.stdin });
    for await (const line of rl) {
      const f = line.trim().split(" ");
      try {
        say(await answer(f));
      } catch (e) {
        const no = e instanceof Definite || (lib.definite && (await lib.definite(e)));
        say((no ? "fail " : "error ") + oneLine(e));
      }
    }
    if (lib.close) await lib.close();
    process.exit(0);
  })();
}

// lost tells the harness the library signalled a lease lost (hello
// lost=true), at any time.
const lost = (token) => process.stdout.write(`lost ${token}\n`);

// leases keeps what the library handed out per token, for release/extend.
class Leases extends Map {
  take(token) {
    const l = this.get(token);
    if (l === undefined) throw new Definite("unknown lock value");
    return l;
  }

  // release calls fn with token's lease and forgets the lease only once fn
  // returned (the library answered): after an error, an unknown outcome, the
  // handle stays, so a release asked again (workload.release_again) reaches
  // the library with the object its user still holds, and the answer is the
  // library's, not this table's "unknown lock value".
  async release(token, fn) {
    const r = await fn(this.take(token));
    this.delete(token);
    return r;
  }
}

module.exports = { serve, env, nodes, ioredisClients, hello, version, lockName, lost, Definite, Leases };

// simple-redis-mutex 3.0.0: lock() leaves its attempts' errors unhandled:
// a standalone reproducer (only the library, node-redis 5 and redis-server).
//
//   NODE_PATH=examples/zoo/npm/node_modules node docs/findings/repro/simple-redis-mutex-unhandled.js
//
// A holds the lock; B waits in lock(), polling every 5 ms. The server then
// drops every normal client's connection (CLIENT KILL TYPE normal, 20 times
// 30 ms apart, up to five rounds until one lands on an attempt in flight),
// as a failover or a network blip would. Each attempt of B's
// is tryLock(...).then(...) with no catch (dist/index.js 57-62), so the
// error of an attempt in flight is an unhandled rejection, which ends a
// node process under node's default (--unhandled-rejections=throw). Here a
// handler records it instead: exit 1 (and "BUG") when the library left one
// unhandled, 0 when not. B's own lock() promise has a catch: a rejection
// of it is not counted.
"use strict";
const net = require("node:net");
const { spawn } = require("node:child_process");
const { createClient } = require("redis");
const { lock } = require("simple-redis-mutex");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// startServer starts a redis-server on a unix socket of its own (no TCP
// port to race for on a shared machine) and waits until it answers PING.
const startServer = async (dir, name) => {
  const path = require("node:path").join(dir, name + ".sock");
  const proc = spawn("redis-server", ["--port", "0", "--unixsocket", path, "--unixsocketperm", "700",
    "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((res) => {
      const c = net.connect(path, () => c.write("PING\r\n"));
      c.on("data", (d) => { c.destroy(); res(String(d).startsWith("+PONG")); });
      c.on("error", () => res(false));
    });
    if (ok) return { path, proc };
    await sleep(50);
  }
  proc.kill();
  throw new Error("redis-server did not answer on " + path);
};
// A run that hangs (a server gone, a client reconnecting for ever) fails
// instead of blocking CI.
setTimeout(() => { console.log("TIMEOUT: the reproducer did not finish in 30 s"); process.exit(2); }, 30000).unref();

const unhandled = [];
process.on("unhandledRejection", (e) => unhandled.push(e));

async function main() {
  const dir = require("node:fs").mkdtempSync(require("node:path").join(require("node:os").tmpdir(), "repro-"));
  let server;
  try {
    server = await startServer(dir, "n1");
    const mk = async () => {
      const c = createClient({ socket: { path: server.path, reconnectStrategy: 20 } });
      c.on("error", () => {}); // node-redis reconnects on its own
      await c.connect();
      return c;
    };
    const [a, b, admin] = [await mk(), await mk(), await mk()];
    await lock(a, "res", { timeout: 5000 });
    lock(b, "res", { timeout: 5000, pollingInterval: 5 }).catch(() => {});
    await sleep(50);
    // Up to five rounds of drops: a drop must land while an attempt is in
    // flight, and on a busy machine one round can miss every attempt.
    for (let round = 0; round < 5 && unhandled.length === 0; round++) {
      for (let i = 0; i < 20; i++) {
        await admin.sendCommand(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]).catch(() => {});
        await sleep(30);
      }
      await sleep(200);
    }
    const first = unhandled[0];
    console.log(`${unhandled.length} unhandled rejections from lock()'s attempts` +
      (first ? ` (first: ${first.name || "Error"}: ${String(first.message).slice(0, 80)})` : ""));
    for (const c of [a, b, admin]) c.destroy();
    if (unhandled.length > 0) {
      console.log("BUG: a waiter in lock() met a dropped connection: under node's default the process would have died");
      return 1;
    }
    return 0;
  } finally {
    if (server) server.proc.kill();
    require("node:fs").rmSync(dir, { recursive: true, force: true });
  }
}

main().then((code) => process.exit(code), (e) => { console.error(e); process.exit(2); });

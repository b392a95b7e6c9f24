// simple-redis-mutex 3.0.0: lock() leaves its attempts' errors unhandled:
// a standalone reproducer (only the library, node-redis 5 and redis-server).
//
//   NODE_PATH=examples/zoo/npm/node_modules node docs/findings/repro/simple-redis-mutex-unhandled.js
//
// A holds the lock; B waits in lock(), polling every 5 ms. The server then
// drops every normal client's connection (CLIENT KILL TYPE normal, 20 times
// 30 ms apart), as a failover or a network blip would. Each attempt of B's
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
const freePort = () => new Promise((res) => {
  const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); });
});

const unhandled = [];
process.on("unhandledRejection", (e) => unhandled.push(e));

async function main() {
  const port = await freePort();
  const server = spawn("redis-server", ["--port", String(port), "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  try {
    await sleep(300);
    const mk = async () => {
      const c = createClient({ socket: { port, reconnectStrategy: 20 } });
      c.on("error", () => {}); // node-redis reconnects on its own
      await c.connect();
      return c;
    };
    const [a, b, admin] = [await mk(), await mk(), await mk()];
    await lock(a, "res", { timeout: 5000 });
    lock(b, "res", { timeout: 5000, pollingInterval: 5 }).catch(() => {});
    await sleep(50);
    for (let i = 0; i < 20; i++) {
      await admin.sendCommand(["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]).catch(() => {});
      await sleep(30);
    }
    await sleep(200);
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
    server.kill();
  }
}

main().then((code) => process.exit(code), (e) => { console.error(e); process.exit(2); });

// simple-redis-mutex 3.0.0: failAfter gives up on an attempt whose SET is
// still on its way, and the SET then takes the lock for nobody: a
// standalone reproducer (only the library, node-redis 5 and redis-server).
//
//   NODE_PATH=examples/zoo/npm/node_modules node docs/findings/repro/simple-redis-mutex-failafter.js
//
// A reaches the server through a tiny proxy of this file's own that holds
// every reply 100 ms. A's lock(..., {timeout: 2000, failAfter: 50}) sends
// SET NX PX at once; failAfter's timer rejects at 50 ms and stops further
// attempts (dist/index.js 64-83: clean(), reject), but the attempt in
// flight (54-63: tryLock's SET NX, then INCR, 103-154) is not cancelled:
// its SET lands, and its release function is resolved into a promise
// already rejected. The key is held by a value whose release nobody has,
// until its timeout: B's lock(..., {failAfter: 1000}) fails too. Exit 1
// (and "BUG") when A was refused and the key it set outlived B's wait; 0
// when A's refusal left the key free.
"use strict";
const net = require("node:net");
const { spawn } = require("node:child_process");
const { createClient } = require("redis");
const { lock, tryLock } = require("simple-redis-mutex");

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
// delayProxy forwards to the server's socket, holding every reply ms.
const delayProxy = (path, ms) => new Promise((res) => {
  const srv = net.createServer((c) => {
    const up = net.connect(path);
    c.on("data", (d) => up.write(d));
    up.on("data", (d) => setTimeout(() => c.write(d), ms));
    const end = () => { c.destroy(); up.destroy(); };
    c.on("error", end); up.on("error", end); c.on("close", end); up.on("close", end);
  }).listen(0, "127.0.0.1", () => res({ port: srv.address().port, srv }));
});

async function main() {
  const dir = require("node:fs").mkdtempSync(require("node:path").join(require("node:os").tmpdir(), "repro-"));
  let server, proxy;
  try {
    server = await startServer(dir, "n1");
    proxy = await delayProxy(server.path, 100);
    const mk = async (socket) => {
      const c = createClient({ socket });
      c.on("error", () => {});
      await c.connect();
      return c;
    };
    const b = await mk({ path: server.path });
    const a = await mk({ port: proxy.port });
    // The library's one pub/sub subscriber is a duplicate of the first
    // client it meets: make it B's (direct), as a warm-up.
    const [, warm] = await tryLock(b, "warm-up", { timeout: 1000 });
    await warm();

    const t0 = Date.now();
    const gotA = await lock(a, "res", { timeout: 2000, failAfter: 50 }).then(() => "acquired", (e) => e.message);
    const tA = Date.now() - t0;
    await sleep(150); // A's SET and INCR replies come back; nothing resolves
    const key = "@simple-redis-mutex:lock-res";
    const left = await b.pTTL(key);
    const t1 = Date.now();
    const gotB = await lock(b, "res", { timeout: 2000, failAfter: 1000 }).then((r) => { r(); return "acquired"; }, (e) => e.message);
    console.log(`A after ${tA} ms: ${gotA}; then the key has ${left} ms to live; B after ${Date.now() - t1} ms: ${gotB}`);
    a.destroy();
    b.destroy();
    if (gotA !== "acquired" && left > 0 && gotB !== "acquired") {
      console.log("BUG: A's lock() was refused, yet its SET took the key, which nobody can release: B was refused too");
      return 1;
    }
    return 0;
  } finally {
    if (proxy) proxy.srv.close();
    if (server) server.proc.kill();
    require("node:fs").rmSync(dir, { recursive: true, force: true });
  }
}

main().then((code) => process.exit(code), (e) => { console.error(e); process.exit(2); });

// redis-semaphore RedlockMutex grants with no validity check: a standalone
// reproducer (only the library, ioredis and redis-server).
//
//   NODE_PATH=examples/zoo/npm/node_modules node docs/findings/repro/redis-semaphore-redlockmutex.js
//
// Five redis-servers; client A reaches two of them (n2, n3) through a tiny
// proxy of this file's own that holds their replies 1.2 s, past the 1 s
// lockTimeout. A's acquire() sends SET NX PX to all five and waits for
// every reply (lib/redlockMutex/acquire.js 20-28, Promise.all), so it
// resolves true 1.2 s after its keys were set, 0.2 s after all five
// expired; B then acquires all five at once. Exit 1 (and "BUG") when both
// hold at once, 0 when A's grant is refused.
"use strict";
const net = require("node:net");
const { spawn } = require("node:child_process");
const Redis = require("ioredis");
const { RedlockMutex } = require("redis-semaphore");

const TTL = 1000, LATE = 1200;
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
  const servers = [];
  const proxies = [];
  try {
    for (let i = 0; i < 5; i++) servers.push(await startServer(dir, "n" + (i + 1)));
    for (const i of [1, 2]) proxies[i] = await delayProxy(servers[i].path, LATE);
    const opt = (i) => (proxies[i] ? { port: proxies[i].port } : { path: servers[i].path });
    const a = servers.map((_, i) => new Redis(opt(i)));
    const b = servers.map((s) => new Redis({ path: s.path }));
    await Promise.all([...a, ...b].map((c) => c.ping())); // connected (A's slow ones 1.2 s later)
    const opts = { lockTimeout: TTL, acquireTimeout: 3000, retryInterval: 10, refreshInterval: 0 };
    const A = new RedlockMutex(a, "res", opts);
    const B = new RedlockMutex(b, "res", opts);
    const t0 = Date.now();
    const gotA = await A.tryAcquire();
    const elapsed = Date.now() - t0;
    const gotB = await B.tryAcquire();
    console.log(`A: acquire ${gotA} after ${elapsed} ms (lockTimeout ${TTL} ms); then B: acquire ${gotB}`);
    [...a, ...b].forEach((c) => c.disconnect());
    if (gotA && gotB) {
      console.log("BUG: A was granted keys that had expired before its acquire returned, and B holds them too");
      return 1;
    }
    return 0;
  } finally {
    proxies.forEach((p) => p && p.srv.close());
    servers.forEach((s) => s.proc.kill());
    require("node:fs").rmSync(dir, { recursive: true, force: true });
  }
}

main().then((code) => process.exit(code), (e) => { console.error(e); process.exit(2); });

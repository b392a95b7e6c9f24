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

// freePort is a port the OS hands out and that is closed again.
const freePort = () => new Promise((res) => {
  const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => res(p)); });
});

// delayProxy forwards to port, holding every reply from the server ms.
const delayProxy = (port, ms) => new Promise((res) => {
  const srv = net.createServer((c) => {
    const up = net.connect(port, "127.0.0.1");
    c.on("data", (d) => up.write(d));
    up.on("data", (d) => setTimeout(() => c.write(d), ms));
    const end = () => { c.destroy(); up.destroy(); };
    c.on("error", end); up.on("error", end); c.on("close", end); up.on("close", end);
  }).listen(0, "127.0.0.1", () => res({ port: srv.address().port, srv }));
});

async function main() {
  const ports = [];
  for (let i = 0; i < 5; i++) ports.push(await freePort());
  const servers = ports.map((p) => spawn("redis-server", ["--port", String(p), "--save", "", "--appendonly", "no"], { stdio: "ignore" }));
  const proxies = [];
  try {
    await sleep(300);
    for (const i of [1, 2]) proxies[i] = await delayProxy(ports[i], LATE);
    const a = ports.map((p, i) => new Redis({ port: proxies[i] ? proxies[i].port : p, lazyConnect: false }));
    const b = ports.map((p) => new Redis({ port: p }));
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
    servers.forEach((s) => s.kill());
  }
}

main().then((code) => process.exit(code), (e) => { console.error(e); process.exit(2); });

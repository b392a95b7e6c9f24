// Replies to acquire with the wall clock it reads (Date.now(), ms).
const rl = require("node:readline").createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const f = line.trim().split(" ");
  if (f[0] === "hello") process.stdout.write("hello 1 name=clock-js\n");
  if (f[0] === "acquire") process.stdout.write("ok " + Date.now() + "\n");
});

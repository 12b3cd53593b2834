// The server's app twice in one process, for bench/http's access log figure:
// the configuration of the environment as server.ts reads it (the access log
// on, by default) and the same with ACCESS_LOG=off, each on its own port.
// Turns on the two then run under one process's conditions (its heap, its
// compiled code, its drift over time), so their ratio is the log's cost and
// not the difference between two processes, which on this kind of machine
// wanders by 20% or more. Prints one line:
// {"event": "listening", "url": <log on>, "quietUrl": <log off>}.
import { createApp, readConfig } from "../lib/app/mod.ts";

const logged = createApp(readConfig(process.env));
const quiet = createApp(readConfig({ ...process.env, ACCESS_LOG: "off" }));
await logged.start();
await quiet.start();
const [on, off] = [await logged.listen(), await quiet.listen()];
console.log(JSON.stringify({ event: "listening", url: on.url, quietUrl: off.url }));
for (const signal of ["SIGTERM", "SIGINT"] as const) {
  process.once(signal, () => {
    void Promise.allSettled([logged.close(), quiet.close()]).then(() => process.exit(0));
  });
}

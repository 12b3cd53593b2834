// Relay intake: accepted webhooks per second on POST /webhook (memory
// backend, 1 KiB events, one endpoint whose receiver answers 200) against a
// bare node:http server that reads and parses the same bodies and answers
// 202; same load generator, connections and run. Target: >= 0.6x.
import { once } from "node:events";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { report } from "./_data.ts";
import type { LoadOptions } from "./_load.ts";
import { runPinnedLoad, startPinnedServer } from "./_processes.ts";

const SECONDS = Number(process.env["BENCH_HTTP_SECONDS"] ?? 10);
const KEY = "bench-intake-key";
const BODY = JSON.stringify({ event: "order.created", data: { order: "o-1", note: "x".repeat(960) } });

// The endpoint's receiver, in this process: answers 200 at once.
let delivered = 0;
const receiver = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    delivered++;
    res.writeHead(200, { "content-length": "0" });
    res.end();
  });
});
receiver.listen(0, "127.0.0.1");
await once(receiver, "listening");
const dir = mkdtempSync(join(tmpdir(), "tributary-intake-"));
const tenants = join(dir, "tenants.json");
writeFileSync(tenants, JSON.stringify({
  tenants: [{
    id: "bench",
    api_keys: [KEY],
    endpoints: [{ id: "e1", url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ["*"], secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }],
  }],
}));
const ours = await startPinnedServer(["--import", "tsx", "server.ts"], {
  PORT: "0",
  HOST: "127.0.0.1",
  SERVICES: "relay",
  TENANTS_FILE: tenants,
  ALLOW_PRIVATE_TARGETS: "127.0.0.1/32",
  QUEUE_CAPACITY: "100000000",
});
const bare = await startPinnedServer(["--import", "tsx", "bench/_intake_baseline.ts"]);
const request = (url: string, seconds: number): LoadOptions => ({
  url: `${url}/webhook`,
  method: "POST",
  headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" },
  body: BODY,
  connections: 10,
  seconds,
});
try {
  for (const server of [bare, ours]) await runPinnedLoad(request(server.url, 2));
  const rates = { ours: [] as number[], bare: [] as number[] };
  for (let round = 0; round < 3; round++) {
    for (const [name, server] of [["bare", bare], ["ours", ours]] as const) {
      const result = await runPinnedLoad(request(server.url, SECONDS));
      if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} non-2xx responses, e.g. ${result.sample}`);
      rates[name].push(result.perSecond);
      console.log(`${name.padEnd(5)} ${result.perSecond.toFixed(0)} webhooks/s accepted`);
    }
  }
  console.log(`receiver got ${delivered} deliveries while intake ran`);
  const ratio = Math.max(...rates.ours) / Math.max(...rates.bare);
  report([{ name: "relay intake", measure: "our accepted webhooks/s / bare node:http parse-and-202 req/s", ratio, target: ">= 0.6", pass: ratio >= 0.6 }]);
} finally {
  ours.child.kill("SIGTERM");
  bare.child.kill("SIGTERM");
  receiver.close();
  receiver.closeAllConnections();
}

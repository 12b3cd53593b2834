// The delivery benchmark's baseline: a plain loop in one Node process that
// POSTs the same signed webhook (Standard Webhooks headers, signed afresh for
// each request) to a receiver, `concurrency` at a time over keep-alive
// connections, `count` times. Loopback only.
// Usage: node --import tsx bench/_signed_loop.ts '{"url", "count", "concurrency", "body", "secret"}'
// Prints {"requests", "seconds"}.
import { Agent, request } from "node:http";
import { parseWebhookSecret, signWebhook } from "../lib/crypto/mod.ts";

const options = JSON.parse(process.argv[2] ?? "{}") as {
  url: string;
  count: number;
  concurrency: number;
  body: string;
  secret: string;
};
const url = new URL(options.url);
if (!/^127\.\d+\.\d+\.\d+$/.test(url.hostname)) {
  throw new Error(`Cannot send to ${url.host}: loopback addresses only`);
}
const keys = parseWebhookSecret(options.secret);
const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
let sent = 0;
let done = 0;

function post(n: number): Promise<void> {
  const id = `msg_bench${n}`;
  const timestamp = Math.floor(Date.now() / 1000);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "POST",
      agent,
      headers: {
        "content-type": "application/json",
        "content-length": Buffer.byteLength(options.body),
        "user-agent": "tributary-relay",
        "webhook-id": id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": signWebhook(keys, id, timestamp, options.body),
      },
    }, (res) => {
      res.resume();
      res.on(
        "end",
        () => (res.statusCode !== undefined && res.statusCode < 300
          ? resolve()
          : reject(new Error(`HTTP ${res.statusCode}`))),
      );
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

async function lane(): Promise<void> {
  while (sent < options.count) {
    await post(sent++);
    done++;
  }
}

const started = performance.now();
const cpuBefore = process.cpuUsage();
await Promise.all(Array.from({ length: options.concurrency }, lane));
const seconds = (performance.now() - started) / 1000;
const cpu = process.cpuUsage(cpuBefore);
agent.destroy();
console.log(JSON.stringify({ requests: done, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6 }));

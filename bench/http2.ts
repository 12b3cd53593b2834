// HTTP/2 over TLS: requests per second for the 100-row page
// (/Observations?$top=100&$filter=LocationId eq 3) on our server with
// TLS_CERT_FILE and TLS_KEY_FILE, against a bare node:http2 secure server
// sending the same bytes. h2load (Debian's nghttp2-client) drives both with the
// same clients and streams; servers pinned to one core, h2load to the other.
// Target: at least 0.5x.
// Needs: no disk, h2load (Debian's nghttp2-client) and openssl, about 1 minute.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { report } from "./_data.ts";
import { median, startPinnedServer } from "./_processes.ts";

const SECONDS = Number(process.env["BENCH_HTTP_SECONDS"] ?? 5);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 3);
const KEY = "tributary-demo-key";
if (spawnSync("sh", ["-c", "command -v h2load && command -v openssl"]).status !== 0) {
  throw new Error(
    "Cannot run the HTTP/2 benchmark: install h2load (Debian nghttp2-client) and openssl",
  );
}

const dir = mkdtempSync(join(tmpdir(), "tributary-bench-h2-"));
const cert = join(dir, "cert.pem");
const key = join(dir, "key.pem");
execFileSync("openssl", [
  "req",
  "-x509",
  "-newkey",
  "ec",
  "-pkeyopt",
  "ec_paramgen_curve:P-256",
  "-nodes",
  "-days",
  "1",
  "-subj",
  "/CN=127.0.0.1",
  "-addext",
  "subjectAltName=IP:127.0.0.1",
  "-keyout",
  key,
  "-out",
  cert,
], { stdio: "ignore" });

const path = `/v1/odata/v4/Observations?$top=100&$filter=${encodeURIComponent("LocationId eq 3")}`;
const ours = await startPinnedServer(["--import", "tsx", "server.ts"], {
  PORT: "0",
  HOST: "127.0.0.1",
  SERVICES: "water",
  STATE_DIR: "",
  RATE_LIMIT_PER_SECOND: "0",
  RATE_LIMIT_CONCURRENCY: "0",
  TLS_CERT_FILE: cert,
  TLS_KEY_FILE: key,
});

/** h2load against a URL: requests per second, all answered 2xx. */
function h2load(url: string, seconds: number): number {
  const taskset = spawnSync("sh", ["-c", "command -v taskset"]).status === 0
    ? ["taskset", "-c", "0"]
    : [];
  const args = [
    ...taskset,
    "h2load",
    "-c",
    "10",
    "-m",
    "10",
    "-D",
    String(seconds),
    "-H",
    `x-api-key: ${KEY}`,
    url,
  ];
  const out = execFileSync(args[0]!, args.slice(1), { encoding: "utf8", maxBuffer: 1 << 24 });
  const rate = /finished in [^,]+, ([0-9.]+) req\/s/.exec(out);
  const status = /status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx/.exec(out);
  if (rate === null || status === null) throw new Error(`Cannot read h2load's output: ${out}`);
  if (Number(status[3]) + Number(status[4]) > 0) throw new Error(`h2load got errors: ${status[0]}`);
  return Number(rate[1]);
}

try {
  const body = execFileSync("curl", [
    "-s",
    "--cacert",
    cert,
    "-H",
    `x-api-key: ${KEY}`,
    `${ours.url}${path}`,
  ]);
  if ((JSON.parse(body.toString()) as { value: unknown[] }).value.length !== 100) {
    throw new Error("unexpected page");
  }
  writeFileSync(join(dir, "body.json"), body);
  const bare = await startPinnedServer([
    "--import",
    "tsx",
    "bench/_bare_http2_server.ts",
    join(dir, "body.json"),
    "application/json; charset=utf-8",
    cert,
    key,
  ]);
  try {
    console.log(`page: ${body.length} bytes; h2load -c 10 -m 10, ${SECONDS} s per run`);
    for (const url of [ours.url, bare.url]) h2load(`${url}${path}`, 1);
    const rates = { ours: [] as number[], bare: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, url] of [["bare", bare.url], ["ours", ours.url]] as const) {
        const rate = h2load(`${url}${path}`, SECONDS);
        rates[name].push(rate);
        console.log(`${name.padEnd(5)} ${rate.toFixed(0)} req/s`);
      }
    }
    const ratio = median(rates.ours) / median(rates.bare);
    report([{
      name: "http2 TLS 100-row page",
      measure: "our req/s / bare node:http2 secure server (h2load, medians)",
      ratio,
      target: ">= 0.5",
      pass: ratio >= 0.5,
    }]);
  } finally {
    bare.child.kill("SIGTERM");
  }
} finally {
  ours.child.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}

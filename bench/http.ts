// HTTP: requests per second for /Observations?$top=100&$filter=LocationId eq N
// on our server, against a bare node:http server sending the same
// precomputed bytes. Same load (autocannon), same connections, same run;
// each server in its own process. Target: at least 0.5x. And the access log's
// cost: the same server with ACCESS_LOG=on (the default, a JSON line a
// request, its standard output to a file) / with ACCESS_LOG=off: target at
// least 0.9x. The load runs in this process, which therefore reads no server's output.
// Needs: no disk (the demo data), about 1 minute.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { report, ROOT } from "./_data.ts";
import { listeningLine } from "../test/_helpers/listening.ts";

const DURATION = Number(process.env["BENCH_HTTP_SECONDS"] ?? 10);
const CONNECTIONS = 10;
const KEY = "tributary-demo-key";

/** A server process whose standard output goes to a file (as to a log collector), not through this process, which runs the load. */
async function start(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string }> {
  const log = join(logDir, `server-${++servers}.log`);
  const out = openSync(log, "w");
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", out, "inherit"],
  });
  closeSync(out);
  // Bounded: a server that has not said where it listens within a minute has failed.
  for (let tries = 0; tries < 3000; tries++) {
    const url = listeningLine(readFileSync(log, "utf8"));
    if (url !== undefined) return { child, url };
    if (child.exitCode !== null) throw new Error(`server exited: ${readFileSync(log, "utf8")}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`server did not start: ${readFileSync(log, "utf8")}`);
}

function load(url: string): Promise<autocannon.Result> {
  return autocannon({ url, connections: CONNECTIONS, duration: DURATION, headers: { "x-api-key": KEY } });
}

const logDir = mkdtempSync(join(tmpdir(), "tributary-bench-logs-"));
let servers = 0;
const SERVER_ENV = { PORT: "0", HOST: "127.0.0.1", RATE_LIMIT_PER_SECOND: "0", RATE_LIMIT_CONCURRENCY: "0", STATE_DIR: "" };
const ours = await start(["--import", "tsx", "server.ts"], SERVER_ENV);
// The same server without its access log.
const quiet = await start(["--import", "tsx", "server.ts"], { ...SERVER_ENV, ACCESS_LOG: "off" });
// The same server without its render cache: every page rendered from the columns.
const cold = await start(["--import", "tsx", "server.ts"], { ...SERVER_ENV, RENDER_CACHE_BYTES: "0" });
const path = `/v1/odata/v4/Observations?$top=100&$filter=${encodeURIComponent("LocationId eq 3")}`;
const first = await fetch(`${ours.url}${path}`, { headers: { "x-api-key": KEY } });
const body = Buffer.from(await first.arrayBuffer());
if (first.status !== 200 || (JSON.parse(body.toString()) as { value: unknown[] }).value.length !== 100) {
  throw new Error(`unexpected answer ${first.status}`);
}
const dir = mkdtempSync(join(tmpdir(), "tributary-bench-"));
writeFileSync(join(dir, "body.json"), body);
const bare = await start(["--import", "tsx", "bench/_bare_server.ts", join(dir, "body.json"), first.headers.get("content-type")!]);

try {
  console.log(`response: ${body.length} bytes; ${CONNECTIONS} connections, ${DURATION} s per run`);
  const rates = { ours: [] as number[], bare: [] as number[], cold: [] as number[], quiet: [] as number[] };
  for (let round = 0; round < 2; round++) {
    for (const [name, url] of [["bare", `${bare.url}${path}`], ["ours", `${ours.url}${path}`], ["quiet", `${quiet.url}${path}`], ["cold", `${cold.url}${path}`]] as const) {
      const result = await load(url);
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
      rates[name].push(result.requests.average);
      console.log(`${name.padEnd(5)} ${result.requests.average.toFixed(0)} req/s, latency p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`);
    }
  }
  const ratio = Math.max(...rates.ours) / Math.max(...rates.bare);
  const coldRatio = Math.max(...rates.cold) / Math.max(...rates.bare);
  const logged = Math.max(...rates.ours) / Math.max(...rates.quiet);
  console.log(`ours = default configuration (render cache and access log on); quiet = ACCESS_LOG=off; cold = RENDER_CACHE_BYTES=0, every page rendered anew`);
  report([
    { name: "http LocationId page", measure: "our req/s / bare node:http req/s", ratio, target: ">= 0.5", pass: ratio >= 0.5 },
    { name: "http access log", measure: "our req/s with the access log / without it", ratio: logged, target: ">= 0.9", pass: logged >= 0.9 },
    { name: "http page, render cache off", measure: "our req/s without the render cache / bare (informational)", ratio: coldRatio, target: "none", pass: true },
  ]);
} finally {
  ours.child.kill("SIGTERM");
  quiet.child.kill("SIGTERM");
  cold.child.kill("SIGTERM");
  bare.child.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
  rmSync(logDir, { recursive: true, force: true });
}

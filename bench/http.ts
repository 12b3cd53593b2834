// HTTP: requests per second for /Observations?$top=100&$filter=LocationId eq 3
// on our server, against a bare node:http server sending the same
// precomputed bytes. Target: at least 0.5x. And the access log's cost: the
// same server with ACCESS_LOG=on (the default, a JSON line a request on its
// standard output, a pipe this process drains as a log collector would) /
// with ACCESS_LOG=off: target at least 0.9x. Informational: the render cache
// off (RENDER_CACHE_BYTES=0) / bare, and the servers' CPU time per request
// (from /proc), bare / ours and quiet / ours, which the client's pace does not
// sway. Each server in its own process, all pinned to one core; the client is
// bench/_load.ts (a lean closed loop, 10 connections) in its own process
// pinned to the other (taskset, where there is one). The servers take turns
// of 2 s in 8 rounds, each round in another order (each server twice in each
// place); ratios are of the medians of the rounds, all in the same run. A turn during which other processes took 10%
// or more of either core (a test suite run meanwhile) is run again, up to twice.
// Needs: no disk (the demo data), about 2 minutes (up to 5 while other processes keep the CPUs busy).
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus as cpuTimes, tmpdir } from "node:os";
import { join } from "node:path";
import { report } from "./_data.ts";
import { median, pinToClientCpu, runPinnedLoad, startPinnedServer } from "./_processes.ts";

const SECONDS = Number(process.env["BENCH_HTTP_SECONDS"] ?? 2);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 8);
const CONNECTIONS = 10;
/** A turn during which other processes took this share of the servers' CPU or the client's, or more, is run again. */
const CROWDED = 0.1;
const HEADERS = { "x-api-key": "tributary-demo-key" };
const PATH = `/v1/odata/v4/Observations?$top=100&$filter=${encodeURIComponent("LocationId eq 3")}`;
const SERVER_ENV = { PORT: "0", HOST: "127.0.0.1", RATE_LIMIT_PER_SECOND: "0", RATE_LIMIT_CONCURRENCY: "0", STATE_DIR: "" };

/**
 * CPU seconds a process has used so far (user + system), or NaN without
 * /proc; with `children`, those of its children it has waited for too.
 */
function cpuSeconds(pid: number | "self", children = false): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12]) + (children ? Number(fields[13]) + Number(fields[14]) : 0)) / 100;
  } catch {
    return Number.NaN;
  }
}

/** The one CPU a process is pinned to, or undefined when it may run on several. */
function pinnedCpu(pid: number): number | undefined {
  try {
    const allowed = /^Cpus_allowed_list:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return allowed === null ? undefined : Number(allowed[1]);
  } catch {
    return undefined;
  }
}

/** Seconds a CPU has been busy (any process, the kernel included), from os.cpus(). */
function busySeconds(cpu: number): number {
  const times = cpuTimes()[cpu]?.times;
  return times === undefined ? Number.NaN : (times.user + times.nice + times.sys + times.irq) / 1000;
}

// This process reads the servers' output (ours' access log) as a log
// collector would: beside the client, not on the servers' core.
pinToClientCpu(process.pid);
const servers: { child: ChildProcess }[] = [];
const dir = mkdtempSync(join(tmpdir(), "tributary-bench-"));
try {
  const ours = await startPinnedServer(["--import", "tsx", "server.ts"], SERVER_ENV);
  servers.push(ours);
  const quiet = await startPinnedServer(["--import", "tsx", "server.ts"], { ...SERVER_ENV, ACCESS_LOG: "off" });
  servers.push(quiet);
  // Every page rendered from the columns.
  const cold = await startPinnedServer(["--import", "tsx", "server.ts"], { ...SERVER_ENV, RENDER_CACHE_BYTES: "0" });
  servers.push(cold);
  const first = await fetch(`${ours.url}${PATH}`, { headers: HEADERS });
  const body = Buffer.from(await first.arrayBuffer());
  if (first.status !== 200 || (JSON.parse(body.toString()) as { value: unknown[] }).value.length !== 100) {
    throw new Error(`unexpected answer ${first.status}`);
  }
  writeFileSync(join(dir, "body.json"), body);
  const bare = await startPinnedServer(["--import", "tsx", "bench/_bare_server.ts", join(dir, "body.json"), first.headers.get("content-type")!]);
  servers.push(bare);
  const named = [["bare", bare], ["ours", ours], ["quiet", quiet], ["cold", cold]] as const;
  console.log(`response: ${body.length} bytes; ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per server`);
  // Each warms up (JIT, render cache) before the measured rounds.
  for (const [, server] of named) {
    await runPinnedLoad({ url: `${server.url}${PATH}`, method: "GET", headers: HEADERS, body: "", connections: CONNECTIONS, seconds: 1 });
  }
  const rates = { bare: [] as number[], ours: [] as number[], quiet: [] as number[], cold: [] as number[] };
  const cpus = { bare: [] as number[], ours: [] as number[], quiet: [] as number[], cold: [] as number[] };
  // Other processes on the servers' CPU or the client's (a test suite run meanwhile) slow whichever server runs
  // then: a turn they took CROWDED of either is run again, up to twice, and the least crowded try kept.
  const serverCpu = pinnedCpu(ours.child.pid!);
  const clientCpu = pinnedCpu(process.pid);
  const turn = async (name: string, server: { child: ChildProcess; url: string }) => {
    const before = cpuSeconds(server.child.pid!);
    // The client's side: the load generator (a child waited for) and this process, which drains the servers' output.
    const clientBefore = cpuSeconds("self", true);
    const busyBefore = [serverCpu, clientCpu].map((cpu) => cpu === undefined ? Number.NaN : busySeconds(cpu));
    const started = performance.now();
    const result = await runPinnedLoad({ url: `${server.url}${PATH}`, method: "GET", headers: HEADERS, body: "", connections: CONNECTIONS, seconds: SECONDS });
    const cpu = cpuSeconds(server.child.pid!) - before;
    const clientSide = cpuSeconds("self", true) - clientBefore;
    if (result.non2xx > 0) throw new Error(`${name}: ${result.non2xx} non-2xx responses, e.g. ${result.sample.slice(0, 500)}`);
    const seconds = (performance.now() - started) / 1000;
    const others = serverCpu === undefined || clientCpu === undefined || serverCpu === clientCpu
      ? 0
      : Math.max(busySeconds(serverCpu) - busyBefore[0]! - cpu, busySeconds(clientCpu) - busyBefore[1]! - clientSide) / seconds;
    return { rate: result.perSecond, cpu: cpu * 1e6 / result.requests, others };
  };
  let crowded = 0;
  let retried = 0;
  for (let round = 0; round < ROUNDS; round++) {
    // Another order each round, so that none always runs first or after the same one.
    const order = [...named.slice(round % named.length), ...named.slice(0, round % named.length)];
    const line: string[] = [];
    for (const [name, server] of order) {
      let kept = await turn(name, server);
      for (let again = 0; again < 2 && kept.others >= CROWDED; again++) {
        retried++;
        const next = await turn(name, server);
        if (next.others < kept.others) kept = next;
      }
      if (kept.others >= CROWDED) crowded++;
      rates[name].push(kept.rate);
      cpus[name].push(kept.cpu);
      const note = kept.others >= 0.05 ? ` (others ${(kept.others * 100).toFixed(0)}%)` : "";
      line.push(`${name} ${kept.rate.toFixed(0)}/s ${kept.cpu.toFixed(0)} µs${note}`);
    }
    console.log(`round ${round + 1}: ${line.join(", ")}`);
  }
  const [bareRate, oursRate, quietRate, coldRate] = [median(rates.bare), median(rates.ours), median(rates.quiet), median(rates.cold)];
  const [bareCpu, oursCpu, quietCpu, coldCpu] = [median(cpus.bare), median(cpus.ours), median(cpus.quiet), median(cpus.cold)];
  console.log(`medians: bare ${bareRate.toFixed(0)}, ours ${oursRate.toFixed(0)}, quiet ${quietRate.toFixed(0)}, cold ${coldRate.toFixed(0)} req/s`);
  console.log(`server CPU time per request (medians): bare ${bareCpu.toFixed(0)}, ours ${oursCpu.toFixed(0)}, quiet ${quietCpu.toFixed(0)}, cold ${coldCpu.toFixed(0)} µs`);
  if (retried > 0) console.log(`${retried} turns run again: other processes took ${CROWDED * 100}% or more of the servers' CPU or the client's${crowded > 0 ? `; ${crowded} kept so, their rates noisy (CPU times less so)` : ""}`);
  console.log(`ours = default configuration (render cache and access log on); quiet = ACCESS_LOG=off; cold = RENDER_CACHE_BYTES=0, every page rendered anew`);
  const ratio = oursRate / bareRate;
  const logged = oursRate / quietRate;
  const coldRatio = coldRate / bareRate;
  report([
    { name: "http LocationId page", measure: "our req/s / bare node:http req/s (medians)", ratio, target: ">= 0.5", pass: ratio >= 0.5 },
    { name: "http access log", measure: "our req/s with the access log / without it (medians)", ratio: logged, target: ">= 0.9", pass: logged >= 0.9 },
    { name: "http page, render cache off", measure: "our req/s without the render cache / bare (informational)", ratio: coldRatio, target: "none", pass: true },
    // The servers' own cost, whatever the client's pace: when the client, not the server, sets a rate, these tell more.
    { name: "http page, server CPU", measure: "bare's CPU time per request / ours (informational)", ratio: bareCpu / oursCpu, target: "none", pass: true },
    { name: "http access log, server CPU", measure: "our CPU time per request without the access log / with it (informational)", ratio: quietCpu / oursCpu, target: "none", pass: true },
  ]);
} finally {
  for (const server of servers) server.child.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}

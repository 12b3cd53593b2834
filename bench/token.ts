// Token endpoint: client_credentials grants per second over HTTP, ours against
// @node-oauth/oauth2-server with an in-memory model hashing tokens the same
// way; same client, same connections, same run. Target: >= 3x.
//
// The client is bench/_load.ts, a lean closed loop: with autocannon on a
// two-core machine the client, not the servers, set the pace. Each server's
// CPU time per grant (from /proc) is printed too, as a check on the rate.
// Both servers run pinned to the same core and the client to another
// (taskset, where there is one).
//
// Beside them, in the same rounds, a bare node:http server doing the least a
// grant must do (bench/_bare_token_server.ts): ours against it says how much
// of a grant's cost is the tributary's own and how much is node:http and the
// kernel's, which no server on node:http can shed.
// Needs: no disk, about 1 minute.
import { readFileSync } from "node:fs";
import { report } from "./_data.ts";
import { runPinnedLoad, startPinnedServer } from "./_processes.ts";

const SECONDS = Number(process.env["BENCH_HTTP_SECONDS"] ?? 10);
const CONNECTIONS = 10;
const HEADERS = {
  authorization: `Basic ${btoa("demo-backend:demo-backend-secret")}`,
  "content-type": "application/x-www-form-urlencoded",
};
const BODY = "grant_type=client_credentials";

async function check(url: string): Promise<void> {
  const response = await fetch(`${url}/oauth2/token`, {
    method: "POST",
    headers: HEADERS,
    body: BODY,
  });
  const body = await response.json() as { access_token?: string };
  if (response.status !== 200 || typeof body.access_token !== "string") {
    throw new Error(`${url}: ${response.status} ${JSON.stringify(body)}`);
  }
}

/** CPU seconds a process has used so far (user + system), or NaN without /proc. */
function cpuSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

// Without the access log, as the peer writes none: its cost is bench/http's to measure.
const ours = await startPinnedServer(["--import", "tsx", "server.ts"], {
  PORT: "0",
  HOST: "127.0.0.1",
  SERVICES: "sync",
  STATE_DIR: "",
  ACCESS_LOG: "off",
});
const peer = await startPinnedServer(["--import", "tsx", "bench/_oauth2_server.ts"]);
const bare = await startPinnedServer(["--import", "tsx", "bench/_bare_token_server.ts"]);
try {
  await check(ours.url);
  await check(peer.url);
  await check(bare.url);
  // Each warms up (JIT) before the measured rounds; each server keeps every
  // token it issued, so later rounds run with fuller maps. Best against best.
  for (const server of [peer, ours, bare]) {
    await runPinnedLoad({
      url: `${server.url}/oauth2/token`,
      method: "POST",
      headers: HEADERS,
      body: BODY,
      connections: CONNECTIONS,
      seconds: 2,
    });
  }
  const rates = { ours: [] as number[], peer: [] as number[], bare: [] as number[] };
  /** Server CPU µs per grant, each round. */
  const cpus = { ours: [] as number[], peer: [] as number[], bare: [] as number[] };
  for (let round = 0; round < 3; round++) {
    for (const [name, server] of [["peer", peer], ["ours", ours], ["bare", bare]] as const) {
      const before = cpuSeconds(server.child.pid!);
      const result = await runPinnedLoad({
        url: `${server.url}/oauth2/token`,
        method: "POST",
        headers: HEADERS,
        body: BODY,
        connections: CONNECTIONS,
        seconds: SECONDS,
      });
      const cpu = cpuSeconds(server.child.pid!) - before;
      if (result.non2xx > 0) {
        throw new Error(`${name}: ${result.non2xx} non-2xx responses, e.g. ${result.sample}`);
      }
      rates[name].push(result.perSecond);
      cpus[name].push(cpu * 1e6 / result.requests);
      console.log(
        `${name.padEnd(5)} ${result.perSecond.toFixed(0)} grants/s, server CPU ${
          (cpu * 1e6 / result.requests).toFixed(1)
        } µs/grant`,
      );
    }
  }
  const ratio = Math.max(...rates.ours) / Math.max(...rates.peer);
  const floor = Math.max(...rates.ours) / Math.max(...rates.bare);
  console.log(
    `ours / a bare node:http grant server: ${floor.toFixed(3)} by grants/s (server CPU ${
      Math.min(...cpus.ours).toFixed(1)
    } against ${Math.min(...cpus.bare).toFixed(1)} µs); the peer / bare ${
      (Math.max(...rates.peer) / Math.max(...rates.bare)).toFixed(3)
    }`,
  );
  report([{
    name: "token client_credentials",
    measure: `our grants/s / @node-oauth/oauth2-server grants/s, best round of each (server CPU ${
      Math.min(...cpus.ours).toFixed(1)
    } µs per grant, the peer ${Math.min(...cpus.peer).toFixed(1)} µs, a bare node:http grant ${
      Math.min(...cpus.bare).toFixed(1)
    } µs, least of the rounds)`,
    ratio,
    target: ">= 3",
    pass: ratio >= 3,
  }]);
} finally {
  for (const server of [ours, peer, bare]) server.child.kill("SIGTERM");
}

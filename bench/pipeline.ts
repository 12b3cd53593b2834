// Pipeline: what each stage of the shared request path costs, the path every
// service's request takes, with a handler that answers fixed bytes (a small
// JSON body) so that the path alone is measured. Stages, each adding its piece
// to those before: bare node:http (writeHead and end of the same bytes); the
// node adapter alone (createNodeListener on the app's node server); + the
// router (the app's mounts and the water service's route table); + metrics
// (withMetrics and createHttpMetrics, with the route namer, as createApp mounts
// a service); + request ids; + the key check and rate limit (authenticateApiKey
// and withRateLimit with the memory RateLimiter at the default burst and
// concurrency, the rate high enough that none is refused, wrapped as the water
// service wraps them); + the access log (a JSON line a request on standard
// output, which this process drains as a log collector would); + the
// compression check (withCompression, as serveOverHttp wraps the app; the body
// is below COMPRESS_ABOVE_BYTES). Prints, per stage, req/s, the server's CPU
// time per request (from /proc) and what the stage adds to the one before, and
// reports the full path's rate / bare's (informational). Each stage runs in
// three processes of its own, all pinned to one core; the client is
// bench/_load.ts (a lean closed loop, 10 connections) pinned to the other. Two
// processes of the same server differ by several µs a request (where the heap
// and the compiled code fall), as much as a stage costs: so each round loads
// the next process of every stage, and the medians of 6 rounds of 2 s (each
// round in another order) come from all three. A turn during which other
// processes took 10% or more of either core is run again, up to twice.
// Needs: no disk, about 3 minutes (up to 6 while other processes keep the CPUs busy).
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { report } from "./_data.ts";
import {
  API_KEY,
  BODY,
  CONTENT_TYPE,
  formatStageTable,
  includes,
  PATH,
  type StageName,
  stageOrder,
  STAGES,
} from "./_pipeline.ts";
import {
  type MeasuredTurn,
  measureTurn,
  median,
  pinToClientCpu,
  runPinnedLoad,
  startPinnedServer,
} from "./_processes.ts";

const SECONDS = Number(process.env["BENCH_PIPELINE_SECONDS"] ?? 2);
const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 6);
/** Processes of each stage, taking turns from round to round. */
const PROCESSES = Number(process.env["BENCH_PIPELINE_PROCESSES"] ?? 3);
const CONNECTIONS = 10;
/**
 * A turn during which other processes took this share of the servers' CPU or
 * the client's, or more, is run again.
 */
const CROWDED = 0.1;
const HEADERS = { "x-api-key": API_KEY };

/** The header a stage's piece adds to every answer: its stage and those after send it. */
const MARKS: readonly { readonly stage: StageName; readonly header: string }[] = [
  { stage: "request-id", header: "x-request-id" },
  { stage: "rate-limit", header: "ratelimit-limit" },
];

/**
 * Checks that a stage's server answers the fixed bytes, with the headers of
 * its pieces and none of the later stages'.
 */
async function check(stage: StageName, url: string): Promise<void> {
  const response = await fetch(`${url}${PATH}`, { headers: HEADERS });
  const body = new Uint8Array(await response.arrayBuffer());
  if (response.status !== 200 || Buffer.compare(body, BODY) !== 0) {
    throw new Error(`${stage}: unexpected answer ${response.status} ${Buffer.from(body)}`);
  }
  if (stage === "bare") return;
  for (const mark of MARKS) {
    if (includes(stage, mark.stage) !== response.headers.has(mark.header)) {
      throw new Error(
        `${stage}: ${mark.header} is ${includes(stage, mark.stage) ? "missing" : "there"}`,
      );
    }
  }
}

// This process drains the servers' output (the access log) as a log collector
// would: beside the client, not on the servers' core.
pinToClientCpu(process.pid);
const servers = new Map<StageName, { child: ChildProcess; url: string }[]>();
const dir = mkdtempSync(join(tmpdir(), "tributary-bench-"));
try {
  writeFileSync(join(dir, "body.json"), BODY);
  for (const { name } of STAGES) {
    servers.set(name, []);
    for (let i = 0; i < PROCESSES; i++) {
      const server = await startPinnedServer(
        name === "bare"
          ? ["--import", "tsx", "bench/_bare_server.ts", join(dir, "body.json"), CONTENT_TYPE]
          : ["--import", "tsx", "bench/_pipeline_server.ts", name],
      );
      servers.get(name)!.push(server);
      await check(name, server.url);
    }
  }
  console.log(
    `response: ${BODY.length} bytes; ${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per stage, ${PROCESSES} processes of each stage taking turns`,
  );
  const load = (url: string, seconds: number) => ({
    url: `${url}${PATH}`,
    method: "GET",
    headers: HEADERS,
    body: "",
    connections: CONNECTIONS,
    seconds,
  });
  // Each warms up (JIT) before the measured rounds: a server's first seconds under load are slower.
  for (const stage of servers.values()) {
    for (const server of stage) await runPinnedLoad(load(server.url, 2));
  }
  const rates = new Map<StageName, number[]>(STAGES.map(({ name }) => [name, []]));
  const cpus = new Map<StageName, number[]>(STAGES.map(({ name }) => [name, []]));
  const non2xx = new Map<StageName, number>(STAGES.map(({ name }) => [name, 0]));
  let crowded = 0;
  let retried = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const line: string[] = [];
    for (const name of stageOrder(round)) {
      const server = servers.get(name)![round % PROCESSES]!;
      const turn = (): Promise<MeasuredTurn> =>
        measureTurn(server.child, load(server.url, SECONDS));
      // Other processes on either core (a test suite run meanwhile) slow whichever stage runs then:
      // a turn they took CROWDED of is run again, up to twice, and the least crowded try kept.
      let kept = await turn();
      for (let again = 0; again < 2 && kept.others >= CROWDED; again++) {
        retried++;
        const next = await turn();
        if (next.others < kept.others) kept = next;
      }
      if (kept.others >= CROWDED) crowded++;
      non2xx.set(name, non2xx.get(name)! + kept.non2xx);
      rates.get(name)!.push(kept.requests / kept.seconds);
      cpus.get(name)!.push(kept.cpu * 1e6 / kept.requests);
      const note = kept.others >= 0.05 ? ` (others ${(kept.others * 100).toFixed(0)}%)` : "";
      line.push(
        `${name} ${rates.get(name)!.at(-1)!.toFixed(0)}/s ${
          cpus.get(name)!.at(-1)!.toFixed(0)
        } µs${note}`,
      );
    }
    console.log(`round ${round + 1}: ${line.join(", ")}`);
  }
  const figures = STAGES.map(({ name, label }) => ({
    label,
    rate: median(rates.get(name)!),
    cpuMicros: median(cpus.get(name)!),
  }));
  console.log("");
  for (const line of formatStageTable(figures)) console.log(line);
  console.log("");
  const bare = figures[0]!;
  const full = figures.at(-1)!;
  console.log(
    `the full path costs ${
      (full.cpuMicros - bare.cpuMicros).toFixed(1)
    } µs of server CPU per request over bare node:http (${full.cpuMicros.toFixed(1)} against ${
      bare.cpuMicros.toFixed(1)
    }); medians of ${ROUNDS} rounds, each stage's increment over the median of the stage before`,
  );
  const refused = STAGES.filter(({ name }) => non2xx.get(name)! > 0);
  console.log(
    refused.length === 0
      ? "non-2xx responses: none"
      : `non-2xx responses: ${
        refused.map(({ name }) => `${name} ${non2xx.get(name)}`).join(", ")
      } (their turns measured error answers too)`,
  );
  if (retried > 0) {
    console.log(
      `${retried} turns run again: other processes took ${
        CROWDED * 100
      }% or more of the servers' CPU or the client's${
        crowded > 0 ? `; ${crowded} kept so, their rates noisy (CPU times less so)` : ""
      }`,
    );
  }
  report([
    {
      name: "pipeline full path",
      measure:
        `req/s of the full shared path answering fixed bytes / bare node:http (medians; server CPU ${
          full.cpuMicros.toFixed(1)
        } µs per request, bare ${bare.cpuMicros.toFixed(1)} µs; informational)`,
      ratio: full.rate / bare.rate,
      target: "none",
      pass: true,
    },
    {
      name: "pipeline full path, server CPU",
      measure: `bare's CPU time per request / the full path's (${bare.cpuMicros.toFixed(1)} / ${
        full.cpuMicros.toFixed(1)
      } µs; informational)`,
      ratio: bare.cpuMicros / full.cpuMicros,
      target: "none",
      pass: true,
    },
  ]);
} finally {
  for (const stage of servers.values()) for (const server of stage) server.child.kill("SIGTERM");
  rmSync(dir, { recursive: true, force: true });
}

// Warm start: seconds from starting the server process (server.ts,
// SERVICES=water) to the first 200 answer of a query over 10,000,000 rows,
// with each dataset's snapshot in DATASET_CACHE_DIR, against the cold start
// from the CSV files in the same run (which writes the snapshots). Target: the
// warm start under 5 seconds (the median of three); warm / cold is printed,
// and the start of the same process with no datasets, for what is not loading.
// Needs: 2.6 GB of disk (parts 0 to 9, generated once, about 3 minutes) and 0.6 GB more for the snapshots (kept in .bench-data/warm-start-cache), 4 GB of memory, about 2 minutes.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listeningLine } from "../test/_helpers/listening.ts";
import { BENCH_DIR, ensureLinked, report, ROOT } from "./_data.ts";
import { median } from "./_processes.ts";

const KEY = "warm-start-bench-key";
const QUERY =
  "/v1/odata/v4/Observations?$filter=CharacteristicName eq 'pH' and ActivityStartYear ge 2015&$top=100";
const WARM_RUNS = 3;

const data = await ensureLinked("ten", 10);
const cache = join(BENCH_DIR, "warm-start-cache");
const empty = mkdtempSync(join(tmpdir(), "tributary-warm-start-"));

/** One start: milliseconds from spawning the server to its first 200 answer, that answer, and its log. */
async function start(
  dataDir: string,
): Promise<{ ms: number; listenMs: number; body: string; log: string }> {
  const began = performance.now();
  const child = spawn(process.execPath, ["--import", "tsx", "server.ts"], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: "0",
      SERVICES: "water",
      STATE_DIR: "",
      DATA_DIR: dataDir,
      DATASET_CACHE_DIR: cache,
      API_KEYS_FILE: "",
      API_KEYS: KEY,
      RATE_LIMIT_PER_SECOND: "0",
      RATE_LIMIT_CONCURRENCY: "0",
      LOG_FORMAT: "json",
      ACCESS_LOG: "off",
    },
    stdio: ["ignore", "pipe", "inherit"],
  });
  try {
    let log = "";
    child.stdout!.on("data", (chunk: Buffer) => (log += chunk.toString()));
    const url = await listening(child, () => log);
    const listenMs = performance.now() - began;
    const response = await fetch(`${url}${QUERY.replaceAll(" ", "%20")}`, {
      headers: { "x-api-key": KEY },
    });
    // Next links name the server's origin, another port each start.
    const body = (await response.text()).replaceAll(url, "<origin>");
    const ms = performance.now() - began;
    if (response.status !== 200) {
      throw new Error(`the first answer was ${response.status}: ${body.slice(0, 200)}`);
    }
    return { ms, listenMs, body, log };
  } finally {
    child.kill("SIGTERM");
    if (child.exitCode === null && child.signalCode === null) await once(child, "exit");
  }
}

/** The URL of the server once it prints its listening line. */
async function listening(child: ChildProcess, output: () => string): Promise<string> {
  for (;;) {
    const url = listeningLine(output());
    if (url !== undefined) return url;
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`server exited: ${output()}`);
    }
    const stop = new AbortController();
    await Promise.race([
      once(child.stdout!, "data", { signal: stop.signal }),
      once(child, "exit", { signal: stop.signal }),
    ]).catch(() => {});
    stop.abort();
  }
}

/** How many datasets a server's log says came from their snapshots. */
function fromSnapshots(log: string): number {
  return Number(/\((\d+) from their snapshots\)/.exec(log)?.[1] ?? 0);
}

try {
  rmSync(cache, { recursive: true, force: true });
  mkdirSync(cache, { recursive: true });
  const bare = await start(empty);
  console.log(
    `start with no datasets: ${
      (bare.ms / 1000).toFixed(2)
    } s to the first answer (Node, tsx and the app)`,
  );
  const cold = await start(data);
  const snapshotBytes = readdirSync(cache).reduce(
    (sum, name) => sum + statSync(join(cache, name)).size,
    0,
  );
  console.log(
    `cold start from CSV (writing the snapshots): ${
      (cold.ms / 1000).toFixed(2)
    } s to the first answer (listening at ${(cold.listenMs / 1000).toFixed(2)} s); ` +
      `snapshots: ${readdirSync(cache).length} files, ${(snapshotBytes / 1e6).toFixed(0)} MB`,
  );
  if (fromSnapshots(cold.log) !== 0) throw new Error("the cold start read snapshots");
  const warm: number[] = [];
  for (let run = 0; run < WARM_RUNS; run++) {
    const result = await start(data);
    if (result.body !== cold.body) {
      throw new Error("the warm start answered otherwise than the cold one");
    }
    const read = fromSnapshots(result.log);
    if (read !== readdirSync(cache).length) {
      throw new Error(`the warm start read ${read} datasets from their snapshots`);
    }
    warm.push(result.ms);
    console.log(
      `warm start ${run + 1}: ${
        (result.ms / 1000).toFixed(2)
      } s to the first answer (listening at ${
        (result.listenMs / 1000).toFixed(2)
      } s), ${read} datasets from their snapshots`,
    );
  }
  const seconds = median(warm) / 1000;
  console.log(
    `warm start (median of ${WARM_RUNS}): ${seconds.toFixed(2)} s; cold: ${
      (cold.ms / 1000).toFixed(2)
    } s; warm / cold = ${(median(warm) / cold.ms).toFixed(3)}`,
  );
  report([
    {
      name: "warm start 10M rows",
      measure:
        "seconds from process start to the first 200 answer, 10,000,000 rows, snapshots present",
      ratio: seconds,
      target: "< 5",
      pass: seconds < 5,
    },
    {
      name: "warm start / cold start",
      measure: "the same with snapshots / from the CSV files, same run (informational)",
      ratio: median(warm) / cold.ms,
      target: "none",
      pass: true,
    },
  ]);
} finally {
  rmSync(empty, { recursive: true, force: true });
}

// $apply, the aggregation engine (issue 30), on two queries: the mean and
// count of ResultValue by (LocationId, ActivityStartYear) of the pH readings,
// and the mean, least, greatest and count by CharacteristicName of all rows.
// - In process, over 10,000,000 observations (parts 0 to 9): our engine (the
//   $apply entry the HTTP layer calls: parse, bind, filter, group, aggregate,
//   rows out) against DuckDB (@duckdb/node-api, its default threads, one a
//   core; one thread printed too) on the same rows loaded into a table,
//   answers checked equal first (counts, least and greatest exactly, means to
//   1e-9): our time / DuckDB's, target <= 2 (medians, after a warm-up; CPU
//   time printed beside). And the heap one aggregation of ours allocates (a
//   GC profile: growth plus what collections freed), per row read: target < 1
//   byte where the groups are few (an object a row would be 16 or more).
// - Over HTTP, on the demo rows (data/datasets, as `npm start` serves them):
//   our server against SAP CAP 10 (@sap/cds with @cap-js/sqlite, SQLite in
//   memory, on Node 24) serving the same rows with the same $apply, each
//   pinned to one core, driven by bench/_load.ts (10 connections) pinned to
//   the other: our requests per second / CAP's, target >= 10, both as our
//   server answers a repeated request (from its kept aggregates) and with
//   every request a new $apply text (spaces varied), so that each is parsed,
//   bound and aggregated anew. Server CPU time per request printed beside.
// BENCH_APPLY=duckdb or =http runs one part. CAP (and a Node 24, unless
// NODE24_BIN names one) is installed from the npm registry on first use.
// Needs: 2.6 GB of disk (parts 0 to 9), 10 GB of memory, the npm registry once, about 4 minutes.
import {
  DOUBLE,
  type DuckDBConnection,
  DuckDBDataChunk,
  DuckDBInstance,
  INTEGER,
  version as duckdbVersion,
} from "@duckdb/node-api";
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { GCProfiler } from "node:v8";
import { type Column, rowNumberReader } from "../lib/columnar/mod.ts";
import type { Scalar } from "../lib/odata/mod.ts";
import { COLLECTIONS, loadDatasets, type WaterStore } from "../lib/water/mod.ts";
import { aggregateQuery, prepareApply } from "../lib/water/query/query_apply.ts";
import { ensureCap } from "./_cap.ts";
import { type BenchResult, ensureLinked, report, ROOT } from "./_data.ts";
import { measureTurn, median, pinToClientCpu, startPinnedServer } from "./_processes.ts";

const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 9);
const HTTP_ROUNDS = Number(process.env["BENCH_HTTP_ROUNDS"] ?? 5);
const SECONDS = Number(process.env["BENCH_HTTP_SECONDS"] ?? 2);
const CONNECTIONS = 10;
/** The parts to run: both by default; BENCH_APPLY=duckdb or =http runs one. */
const PARTS = (process.env["BENCH_APPLY"] ?? "duckdb,http").split(",");
const observations = COLLECTIONS.get("Observations")!;

/** A query as each contender spells it. */
interface Query {
  readonly name: string;
  /** Our `$apply`, and CAP's. */
  readonly apply: string;
  /** DuckDB's, the same columns in the same order. */
  readonly sql: string;
  /** Leading columns that are the group's key; the rest are aggregates. */
  readonly keys: number;
  /** How each aggregate compares: exactly, or within a relative tolerance. */
  readonly exact: readonly boolean[];
}

const QUERIES: readonly Query[] = [
  {
    name: "pH by location and year",
    apply:
      "filter(CharacteristicName eq 'pH')/groupby((LocationId,ActivityStartYear),aggregate(ResultValue with average as m,$count as n))",
    sql:
      "SELECT LocationId, ActivityStartYear, avg(ResultValue) AS m, count(*) AS n FROM observations WHERE CharacteristicName = 'pH' GROUP BY LocationId, ActivityStartYear",
    keys: 2,
    exact: [false, true],
  },
  {
    name: "by characteristic",
    apply:
      "groupby((CharacteristicName),aggregate(ResultValue with average as m,ResultValue with min as lo,ResultValue with max as hi,$count as n))",
    sql:
      "SELECT CharacteristicName, avg(ResultValue) AS m, min(ResultValue) AS lo, max(ResultValue) AS hi, count(*) AS n FROM observations GROUP BY CharacteristicName",
    keys: 1,
    exact: [false, true, true, true],
  },
];

/** The columns the contenders are given besides ours, by name. */
const EXPORTED = [
  "Id",
  "LocationId",
  "ActivityStartDate",
  "ActivityStartYear",
  "CharacteristicName",
  "ResultValue",
  "ResultUnit",
] as const;

/**
 * Reads a column's values for ascending rows, written here apart from the
 * engine (its value sources), so that the rows the peers get do not come from
 * the code under test.
 */
function ascendingReader(column: Column): (row: number) => Scalar {
  switch (column.kind) {
    case "dict": {
      const { codes, values } = column;
      return (row) => values[codes[row]!]!;
    }
    case "number": {
      const values = column.values;
      return (row) => (Number.isNaN(values[row]!) ? null : values[row]!);
    }
    case "rownumber":
      return rowNumberReader(column);
    case "values":
      return (row) => {
        const value = column.values[row];
        if (Array.isArray(value)) throw new Error("a multi-valued column cannot be exported");
        return (value ?? null) as Scalar;
      };
    case "group": {
      const inner = ascendingReader(column.column);
      const starts = column.starts;
      let g = 0;
      return (row) => {
        while (starts[g + 1]! <= row) g++;
        return inner(g);
      };
    }
  }
}

/** A reader of each exported column of a store's observations. */
function readersOf(store: WaterStore): Record<(typeof EXPORTED)[number], (row: number) => Scalar> {
  const view = store.view("observation", observations.filter);
  const readers = {} as Record<(typeof EXPORTED)[number], (row: number) => Scalar>;
  for (const name of EXPORTED) {
    const column = view.column(name);
    if (column === undefined) throw new Error(`Observations have no ${name}`);
    readers[name] = ascendingReader(column);
  }
  return readers;
}

/** Our answer to a query: the engine the HTTP layer calls for $apply, from the text to the rows. */
function ours(store: WaterStore, query: Query): Scalar[][] {
  return aggregateQuery(store, {
    collection: observations,
    apply: prepareApply(observations, query.apply),
    maxGroups: 10_000_000,
  });
}

/** Rows by their key's text; fails loudly when two answers differ. */
function checkEqual(
  query: Query,
  names: readonly [string, string],
  a: readonly (readonly unknown[])[],
  b: readonly (readonly unknown[])[],
): void {
  const byKey = (rows: readonly (readonly unknown[])[]) =>
    new Map(rows.map((row) => [JSON.stringify(row.slice(0, query.keys)), row]));
  const left = byKey(a);
  const right = byKey(b);
  const fail = (why: string): never => {
    throw new Error(`${query.name}: ${names[0]} and ${names[1]} answer differently: ${why}`);
  };
  if (left.size !== a.length || right.size !== b.length) fail("a key appears twice");
  if (left.size !== right.size) fail(`${left.size} groups against ${right.size}`);
  for (const [key, row] of left) {
    const other = right.get(key) ?? fail(`${names[1]} lacks the group ${key}`);
    query.exact.forEach((exact, i) => {
      const x = numberOf(row[query.keys + i]);
      const y = numberOf(other[query.keys + i]);
      const same = x === y ||
        (!exact && x !== null && y !== null &&
          Math.abs(x - y) <= 1e-9 * Math.max(Math.abs(x), Math.abs(y)));
      if (!same) fail(`group ${key}, aggregate ${i + 1}: ${x} against ${y}`);
    });
  }
}

function numberOf(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === "bigint") return Number(value);
  if (typeof value !== "number") throw new Error(`an aggregate is not a number: ${String(value)}`);
  return value;
}

const results: BenchResult[] = [];
// Other processes skew both parts (DuckDB's second thread most): the load at the start is printed with the figures.
console.log(
  `node ${process.version}, DuckDB ${duckdbVersion()}; ${availableParallelism()} CPUs, load average ${
    loadavg().map((load) => load.toFixed(2)).join(" ")
  }`,
);

// ---- In process, over 10,000,000 observations: our engine and DuckDB. ----
if (PARTS.includes("duckdb")) {
  const store = (await loadDatasets(await ensureLinked("ten", 10))).store;
  const rows = store.observationCount;
  const instance = await DuckDBInstance.create(":memory:");
  const connection = await instance.connect();
  const loaded = performance.now();
  await loadIntoDuckDb(connection, store);
  console.log(
    `${rows} observations; loaded into DuckDB in ${
      ((performance.now() - loaded) / 1000).toFixed(1)
    } s`,
  );
  const threads = Number(
    (await connection.runAndReadAll("SELECT current_setting('threads')")).getRowsJS()[0]![0],
  );
  const duck = async (query: Query) => (await connection.runAndReadAll(query.sql)).getRowsJS();

  for (const query of QUERIES) {
    const answer = ours(store, query);
    checkEqual(query, ["ours", "DuckDB"], answer, await duck(query));
    const matched = answer.reduce((n, row) => n + (row.at(-1) as number), 0);
    // Warm-up, then turns in alternation, so that both see the machine alike.
    ours(store, query);
    await connection.runAndReadAll(query.sql);
    const times = {
      ours: [] as number[],
      duck: [] as number[],
      duckRows: [] as number[],
      duckOne: [] as number[],
    };
    const cpu = { ours: 0, duck: 0 };
    for (let round = 0; round < ROUNDS; round++) {
      let usage = process.cpuUsage();
      let started = performance.now();
      ours(store, query);
      times.ours.push(performance.now() - started);
      cpu.ours += cpuMs(process.cpuUsage(usage));
      usage = process.cpuUsage();
      started = performance.now();
      await connection.runAndReadAll(query.sql);
      times.duck.push(performance.now() - started);
      cpu.duck += cpuMs(process.cpuUsage(usage));
      started = performance.now();
      await duck(query);
      times.duckRows.push(performance.now() - started);
      await connection.run("SET threads = 1");
      started = performance.now();
      await connection.runAndReadAll(query.sql);
      times.duckOne.push(performance.now() - started);
      await connection.run(`SET threads = ${threads}`);
    }
    const ms = {
      ours: median(times.ours),
      duck: median(times.duck),
      duckRows: median(times.duckRows),
      duckOne: median(times.duckOne),
    };
    // The least of three (the JIT's own work lands on the heap now and then), and what the answer itself holds.
    const heap = [0, 1, 2].map(() => allocatedBy(() => ours(store, query))).reduce((a, b) =>
      a.bytes <= b.bytes ? a : b
    );
    const held = retainedBy(() => ours(store, query));
    console.log(`${query.name}: ${answer.length} groups of ${matched} rows, equal in both`);
    console.log(`  ours:   $apply=${query.apply}`);
    console.log(`  DuckDB: ${query.sql}`);
    console.log(
      `  ours ${ms.ours.toFixed(1)} ms (${
        (ms.ours * 1e6 / rows).toFixed(1)
      } ns a row of ${rows}; CPU ${(cpu.ours / ROUNDS).toFixed(1)} ms); DuckDB ${
        ms.duck.toFixed(1)
      } ms on ${threads} threads (CPU ${(cpu.duck / ROUNDS).toFixed(1)} ms), ${
        ms.duckRows.toFixed(1)
      } ms with its rows read into JavaScript, ${
        ms.duckOne.toFixed(1)
      } ms on 1 thread (medians of ${ROUNDS})`,
    );
    // DuckDB's threads need the machine's other cores: when another process held them, its time is its one-core
    // time, and the ratio flatters ours.
    const cores = cpu.duck / ROUNDS / ms.duck;
    if (threads > 1 && cores < 1.3) {
      console.log(
        `  note: DuckDB's ${threads} threads used ${
          cores.toFixed(2)
        } cores on average (CPU / time): other processes held the rest, so its time is slower than on a quiet machine`,
      );
    }
    console.log(
      `  heap allocated by one aggregation of ours (least of 3): ${
        (heap.bytes / 1e6).toFixed(2)
      } MB, ${heap.collections} collections during it; ${
        (heap.bytes / rows).toFixed(3)
      } bytes a row read, ${
        (heap.bytes / answer.length).toFixed(0)
      } bytes a group; the answer itself holds ${(held / 1e6).toFixed(2)} MB`,
    );
    results.push({
      name: `apply ${query.name}, 10M rows`,
      measure: `our time / DuckDB's (${ms.ours.toFixed(0)} ms / ${
        ms.duck.toFixed(0)
      } ms on ${threads} threads; CPU ${(cpu.ours / ROUNDS).toFixed(0)} ms / ${
        (cpu.duck / ROUNDS).toFixed(0)
      } ms; 1 thread ${ms.duckOne.toFixed(0)} ms)`,
      ratio: ms.ours / ms.duck,
      target: "<= 2",
      pass: ms.ours / ms.duck <= 2,
    });
    // With few groups, what an aggregation allocates is what it allocates by row (an object a row would be 16 bytes
    // a row or more); with many, the answer's rows dominate, and the figure is informational.
    const fewGroups = answer.length * 1000 <= rows;
    results.push({
      name: `apply ${query.name}, heap`,
      measure: `heap bytes one aggregation allocates per row read (${
        (heap.bytes / 1e6).toFixed(1)
      } MB for ${answer.length} groups, ${(heap.bytes / answer.length).toFixed(0)} bytes a group${
        fewGroups ? "" : "; informational: the groups' rows dominate"
      })`,
      ratio: heap.bytes / rows,
      target: fewGroups ? "< 1" : "none",
      pass: !fewGroups || heap.bytes / rows < 1,
    });
  }
  connection.closeSync();
  instance.closeSync();
}

// ---- Over HTTP, on the demo rows: our server and CAP's. ----
if (PARTS.includes("http")) {
  const cap = ensureCap();
  const demo = (await loadDatasets(join(ROOT, "data", "datasets"))).store;
  const dir = mkdtempSync(join(tmpdir(), "tributary-bench-apply-"));
  const servers: ChildProcess[] = [];
  // This process drains the servers' output: beside the client, not on the servers' core.
  pinToClientCpu(process.pid);
  try {
    const readers = readersOf(demo);
    const columns: Record<string, Scalar[]> = {};
    for (const name of EXPORTED) {
      const read = readers[name];
      columns[name] = Array.from({ length: demo.observationCount }, (_, row) => read(row));
    }
    const rowsFile = join(dir, "rows.json");
    writeFileSync(rowsFile, JSON.stringify(columns));
    const oursServer = await startPinnedServer(["--import", "tsx", "server.ts"], {
      PORT: "0",
      HOST: "127.0.0.1",
      RATE_LIMIT_PER_SECOND: "0",
      RATE_LIMIT_CONCURRENCY: "0",
      STATE_DIR: "",
    });
    servers.push(oursServer.child);
    const capServer = await startPinnedServer(
      ["bench/_cap_server.ts", cap.dir, rowsFile],
      {},
      "server",
      cap.node,
    );
    servers.push(capServer.child);
    console.log(
      `demo rows: ${demo.observationCount}; CAP ${capServer.output.trim().split("\n").at(-1)}`,
    );
    const targets = {
      ours: {
        url: `${oursServer.url}/v1/odata/v4/Observations`,
        headers: { "x-api-key": "tributary-demo-key" },
      },
      cap: { url: `${capServer.url}/odata/v4/water/Observations`, headers: {} },
    };
    for (const query of QUERIES) {
      const path = (base: string, apply: string) =>
        `${new URL(base).pathname}?$apply=${encodeURIComponent(apply)}`;
      // Every row of each answer, page after page, compared.
      const all = {
        ours: await fetchAll(
          `${targets.ours.url}?$apply=${encodeURIComponent(query.apply)}`,
          targets.ours.headers,
        ),
        cap: await fetchAll(
          `${targets.cap.url}?$apply=${encodeURIComponent(query.apply)}`,
          targets.cap.headers,
        ),
      };
      const shape = (rows: readonly Record<string, unknown>[]) =>
        rows.map((row) => [...rowKeys(query).map((name) => row[name])]);
      checkEqual(query, ["ours", "CAP"], shape(all.ours.rows), shape(all.cap.rows));
      // The spaces between words varied, one text a request: 32,768 texts, more than either cache of ours keeps.
      const variants = spacedVariants(query.apply, 3, 32);
      const first = await fetchAll(
        `${oursServer.url}${path(targets.ours.url, variants[variants.length - 1]!)}`,
        targets.ours.headers,
      );
      checkEqual(query, ["ours", "ours, spaced"], shape(all.ours.rows), shape(first.rows));
      console.log(
        `${query.name}: ${all.ours.rows.length} groups, equal; first page ${all.ours.firstBytes} bytes from ours, ${all.cap.firstBytes} from CAP (${all.ours.pages} and ${all.cap.pages} pages in all)`,
      );
      /** Requests sent with a new text so far (and up to one more a connection): where the next turn starts. */
      let sent = 0;
      const turn = async (name: "ours" | "fresh" | "cap", seconds: number) => {
        const target = name === "cap" ? targets.cap : targets.ours;
        const server = name === "cap" ? capServer : oursServer;
        const start = sent % variants.length;
        const taken = await measureTurn(server.child, {
          url: `${target.url}?$apply=${encodeURIComponent(query.apply)}`,
          method: "GET",
          headers: target.headers,
          body: "",
          connections: CONNECTIONS,
          seconds,
          ...(name === "fresh"
            ? {
              paths: [...variants.slice(start), ...variants.slice(0, start)].map((apply) =>
                path(target.url, apply)
              ),
            }
            : {}),
        });
        if (name === "fresh") {
          sent += taken.requests + CONNECTIONS;
          if (sent > variants.length) {
            throw new Error(
              `${query.name}: more requests than texts (${variants.length}); some answers would be kept ones`,
            );
          }
        }
        if (taken.non2xx > 0) {
          throw new Error(
            `${name}: ${taken.non2xx} non-2xx answers, e.g. ${taken.sample.slice(0, 400)}`,
          );
        }
        return taken;
      };
      // Warm-up: JIT, and CAP's first requests.
      for (const name of ["ours", "fresh", "cap"] as const) await turn(name, 1);
      const rates = { ours: [] as number[], fresh: [] as number[], cap: [] as number[] };
      const cpus = { ours: [] as number[], fresh: [] as number[], cap: [] as number[] };
      for (let round = 0; round < HTTP_ROUNDS; round++) {
        const order = (["ours", "fresh", "cap"] as const).map((_, i, names) =>
          names[(i + round) % names.length]!
        );
        for (const name of order) {
          const taken = await turn(name, SECONDS);
          rates[name].push(taken.requests / taken.seconds);
          cpus[name].push((taken.cpu * 1e6) / taken.requests);
        }
      }
      const rate = { ours: median(rates.ours), fresh: median(rates.fresh), cap: median(rates.cap) };
      const cpu = { ours: median(cpus.ours), fresh: median(cpus.fresh), cap: median(cpus.cap) };
      console.log(
        `  req/s (medians of ${HTTP_ROUNDS} turns of ${SECONDS} s): ours ${rate.ours.toFixed(0)} (${
          cpu.ours.toFixed(0)
        } µs server CPU a request), ours with each $apply new ${rate.fresh.toFixed(0)} (${
          cpu.fresh.toFixed(0)
        } µs), CAP ${rate.cap.toFixed(0)} (${cpu.cap.toFixed(0)} µs)`,
      );
      for (const name of ["ours", "fresh"] as const) {
        const ratio = rate[name] / rate.cap;
        results.push({
          name: `apply http ${query.name}${name === "fresh" ? ", each anew" : ""}`,
          measure: `our req/s${
            name === "fresh" ? " (every $apply text new)" : " (repeated request)"
          } / CAP's (server CPU ${cpu[name].toFixed(0)} µs a request, CAP ${
            cpu.cap.toFixed(0)
          } µs)`,
          ratio,
          target: ">= 10",
          pass: ratio >= 10,
        });
      }
    }
  } finally {
    for (const child of servers) child.kill("SIGTERM");
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The names of a query's columns in our answer and CAP's: the keys, then the aliases. */
function rowKeys(query: Query): string[] {
  const keys = /groupby\(\(([^)]*)\)/.exec(query.apply)![1]!.split(",").map((k) => k.trim());
  const aliases = [...query.apply.matchAll(/ as (\w+)/g)].map((m) => m[1]!);
  return [...keys, ...aliases];
}

/** Every row of an answer, following @odata.nextLink. */
async function fetchAll(
  url: string,
  headers: Record<string, string>,
): Promise<{ rows: Record<string, unknown>[]; firstBytes: number; pages: number }> {
  const rows: Record<string, unknown>[] = [];
  let next: string | undefined = url;
  let firstBytes = 0;
  let pages = 0;
  while (next !== undefined) {
    const response = await fetch(next, { headers });
    const text = await response.text();
    if (response.status !== 200) {
      throw new Error(`${next}: ${response.status} ${text.slice(0, 400)}`);
    }
    if (pages++ === 0) firstBytes = Buffer.byteLength(text);
    const page = JSON.parse(text) as {
      value: Record<string, unknown>[];
      "@odata.nextLink"?: string;
    };
    rows.push(...page.value);
    const link = page["@odata.nextLink"];
    next = link === undefined ? undefined : new URL(link, next).href;
  }
  return { rows, firstBytes, pages };
}

/**
 * The same text with its first `gaps` spaces each widened to 1 .. `widest`
 * spaces: `widest ** gaps` texts that mean the same.
 */
function spacedVariants(text: string, gaps: number, widest: number): string[] {
  const parts = text.split(" ");
  if (parts.length <= gaps) throw new Error(`"${text}" has fewer than ${gaps} spaces`);
  const out: string[] = [];
  const total = widest ** gaps;
  for (let v = 0; v < total; v++) {
    let rest = v;
    let spaced = parts[0]!;
    for (let i = 1; i < parts.length; i++) {
      let width = 1;
      if (i <= gaps) {
        width = (rest % widest) + 1;
        rest = Math.floor(rest / widest);
      }
      spaced += " ".repeat(width) + parts[i]!;
    }
    out.push(spaced);
  }
  return out;
}

report(results);

function cpuMs(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1000;
}

/**
 * Bytes a function allocates on the JavaScript heap: what the heap grew by,
 * plus what every collection during it freed (typed arrays' contents, kept
 * outside the heap, are not counted; the engine's are per batch and per
 * group).
 */
function allocatedBy(fn: () => unknown): { bytes: number; collections: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error("Run with --expose-gc (npm run bench does)");
  gc();
  const profiler = new GCProfiler();
  profiler.start();
  const before = process.memoryUsage().heapUsed;
  fn();
  const after = process.memoryUsage().heapUsed;
  const profile = profiler.stop();
  let freed = 0;
  for (const entry of profile.statistics) {
    freed += entry.beforeGC.heapStatistics.usedHeapSize - entry.afterGC.heapStatistics.usedHeapSize;
  }
  return { bytes: after - before + freed, collections: profile.statistics.length };
}

/** Bytes of the heap that what a function returns holds (the heap after a collection, with and without it). */
function retainedBy(fn: () => unknown): number {
  const gc = (globalThis as { gc?: () => void }).gc!;
  gc();
  const before = process.memoryUsage().heapUsed;
  const kept = [fn()];
  gc();
  const after = process.memoryUsage().heapUsed;
  return kept.length * (after - before);
}

/**
 * Loads the store's observations into a DuckDB table `observations`
 * (LocationId, ActivityStartYear, CharacteristicName, ResultValue) through
 * its appender, a chunk of 2,048 rows at a time: the names as numbers first,
 * then made text by DuckDB itself in one pass.
 */
async function loadIntoDuckDb(connection: DuckDBConnection, store: WaterStore): Promise<void> {
  await connection.run(
    "CREATE TABLE staged (LocationId INTEGER, ActivityStartYear INTEGER, NameNumber INTEGER, ResultValue DOUBLE)",
  );
  const appender = await connection.createAppender("staged");
  const read = readersOf(store);
  const numbers = new Map<string, number>();
  const size = 2048;
  const rows = store.observationCount;
  const chunk = DuckDBDataChunk.create([INTEGER, INTEGER, INTEGER, DOUBLE], size);
  for (let start = 0; start < rows; start += size) {
    const n = Math.min(size, rows - start);
    if (n !== size) chunk.rowCount = n;
    const columns: (number | null)[][] = [[], [], [], []];
    for (let row = start; row < start + n; row++) {
      const name = read.CharacteristicName(row);
      let number: number | null = null;
      if (typeof name === "string") {
        number = numbers.get(name) ?? numbers.size + 1;
        numbers.set(name, number);
      }
      columns[0]!.push(read.LocationId(row) as number | null);
      columns[1]!.push(read.ActivityStartYear(row) as number | null);
      columns[2]!.push(number);
      columns[3]!.push(read.ResultValue(row) as number | null);
    }
    chunk.setColumns(columns);
    appender.appendDataChunk(chunk);
  }
  appender.closeSync();
  const names = [...numbers.keys()].map((name) => `'${name.replaceAll("'", "''")}'`);
  await connection.run(
    `CREATE TABLE observations AS SELECT LocationId, ActivityStartYear, [${
      names.join(", ")
    }][NameNumber] AS CharacteristicName, ResultValue FROM staged`,
  );
  await connection.run("DROP TABLE staged");
}

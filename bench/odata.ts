// OData pages as generic and DataStream clients fetch them, on 1,000,000 rows,
// in process (the handler, no sockets), each against a baseline in the same run:
// - $orderby=ResultValue desc with $top=100, a page deep in the order / the same page unordered:
//   target <= 3 (the first ordered query, which builds the ranks and the order, is printed);
// - a cold 10,000-row /Observations page (render cache off), JSON.stringify of
//   the same rows as plain objects / our render: target >= 2 (MB/s printed);
// - the same page with br: bytes on the wire / uncompressed: target <= 0.15; and
//   pages per second with br / uncompressed: target >= 0.5;
// - cold 10,000-row pages as a client downloading a dataset gets them (each
//   page once, the default render cache, compression as the server does it):
//   bytes/s of the page with gzip, and with br, / uncompressed: target >= 0.5.
// Needs: 260 MB of disk (part 0), about 2 minutes.
import { type Handler, indexApiKeys, parseApiKey } from "../lib/http/mod.ts";
import { withCompression } from "../lib/http/compression.ts";
import { createWaterService, loadDatasets } from "../lib/water/mod.ts";
import { bodyBytes, makeRequest } from "../test/_helpers/http.ts";
import { type BenchResult, ensureLinked, report } from "./_data.ts";
import { median } from "./_processes.ts";

const ROUNDS = Number(process.env["BENCH_ROUNDS"] ?? 15);
const BASE = "/v1/odata/v4";

const { store } = await loadDatasets(await ensureLinked("one", 1));
console.log(`store: ${store.observationCount} observations`);
const service = (cacheBytes: number) =>
  createWaterService(store, {
    keys: indexApiKeys([parseApiKey("bench", "bench-key")]),
    now: () => performance.now(),
    ratePerSecond: 0,
    maxConcurrent: 0,
    renderCacheBytes: cacheBytes,
    maxResponseBytes: 1 << 30,
  });

/** Fetches a target through a handler: status checked, bytes returned. */
async function get(
  handler: Handler,
  target: string,
  headers: Record<string, string> = {},
): Promise<Buffer> {
  const [path, query = ""] = target.split("?");
  const response = await handler(
    makeRequest({ path: path!, query, headers: { "x-api-key": "bench-key", ...headers } }),
  );
  if (response.status !== 200) {
    throw new Error(`${target}: ${response.status} ${String(response.body).slice(0, 200)}`);
  }
  return bodyBytes(response);
}

/** Median milliseconds of `fn` over the rounds, after one warm-up. */
async function time(fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const started = performance.now();
    await fn();
    times.push(performance.now() - started);
  }
  return median(times);
}

const results: BenchResult[] = [];

// $orderby top-k against the unordered page.
{
  const handler = service(64 * 1024 * 1024);
  const unordered = await time(() =>
    get(handler, `${BASE}/Observations?$top=100&$select=Id,ResultValue`)
  );
  // The first ordered query builds the field's ranks and the order (kept after); the later ones, pages of it.
  const first = performance.now();
  await get(
    handler,
    `${BASE}/Observations?$top=100&$select=Id,ResultValue&$orderby=ResultValue%20desc`,
  );
  const built = performance.now() - first;
  const ordered = await time(() =>
    get(
      handler,
      `${BASE}/Observations?$top=100&$select=Id,ResultValue&$orderby=ResultValue%20desc&$skiptoken=Id:500000`,
    )
  );
  const filtered = await time(() =>
    get(
      handler,
      `${BASE}/Observations?$top=100&$select=Id,ResultValue&$orderby=ResultValue%20desc&$filter=CharacteristicName%20eq%20%27pH%27`,
    )
  );
  console.log(
    `$top=100: unordered ${
      unordered.toFixed(2)
    } ms; $orderby=ResultValue desc: first (ranks and order built) ${
      built.toFixed(0)
    } ms, a page deep in it ${ordered.toFixed(2)} ms, with a filter ${
      filtered.toFixed(2)
    } ms (medians of ${ROUNDS})`,
  );
  results.push({
    name: "orderby top 100 of 1M",
    measure: "time ordered / unordered",
    ratio: ordered / unordered,
    target: "<= 3",
    pass: ordered / unordered <= 3,
  });
}

// A cold 10,000-row page against JSON.stringify of the same rows.
{
  const cold = service(0);
  const target = `${BASE}/Observations?$top=10000&$skiptoken=Id:200000`;
  const page = await get(cold, target);
  const rows = (JSON.parse(page.toString()) as { value: unknown[] }).value;
  const ours = await time(() => get(cold, target));
  const stringify = await time(() => Promise.resolve(JSON.stringify({ value: rows })));
  const megabytes = page.length / 1e6;
  console.log(
    `cold 10,000-row page (${megabytes.toFixed(1)} MB): ours ${ours.toFixed(1)} ms (${
      (megabytes / ours * 1000).toFixed(0)
    } MB/s), JSON.stringify ${stringify.toFixed(1)} ms (${
      (megabytes / stringify * 1000).toFixed(0)
    } MB/s)`,
  );
  results.push({
    name: "cold 10,000-row page",
    measure: "JSON.stringify time / our render time",
    ratio: stringify / ours,
    target: ">= 2",
    pass: stringify / ours >= 2,
  });

  // The same page with br, the render cache on, as a client paging once would get it (warm after the first).
  const compressed = withCompression(service(256 * 1024 * 1024));
  const plain = await get(compressed, target);
  const br = await get(compressed, target, { "accept-encoding": "gzip, deflate, br" });
  const plainMs = await time(() => get(compressed, target));
  const brMs = await time(() =>
    get(compressed, target, { "accept-encoding": "gzip, deflate, br" })
  );
  console.log(
    `10,000-row page: ${plain.length} bytes plain, ${br.length} br; ${
      plainMs.toFixed(1)
    } ms plain, ${brMs.toFixed(1)} ms br`,
  );
  results.push({
    name: "br page bytes",
    measure: "br bytes / uncompressed bytes",
    ratio: br.length / plain.length,
    target: "<= 0.15",
    pass: br.length / plain.length <= 0.15,
  });
  results.push({
    name: "br pages per second",
    measure: "pages/s with br / uncompressed",
    ratio: plainMs / brMs,
    target: ">= 0.5",
    pass: plainMs / brMs >= 0.5,
  });
}

// Cold pages compressed: each round asks for pages never asked before, one per coding, interleaved.
{
  const handler = withCompression(service(64 * 1024 * 1024));
  const codings = ["identity", "gzip", "br"] as const;
  const times = { identity: [] as number[], gzip: [] as number[], br: [] as number[] };
  const sizes = { identity: 0, gzip: 0, br: 0 };
  let pageBytes = 0;
  let next = 0;
  // More rounds than the others: a page never asked before costs what fresh memory costs, which varies from page to page.
  const rounds = Math.max(ROUNDS, 25);
  for (let round = -2; round < rounds; round++) {
    for (const coding of codings) {
      const target = `${BASE}/Observations?$top=10000&$skiptoken=Id:${(next++ % 99) * 10_000 + 1}`;
      const started = performance.now();
      const bytes = await get(
        handler,
        target,
        coding === "identity"
          ? {}
          : { "accept-encoding": coding === "br" ? "gzip, deflate, br" : coding },
      );
      const elapsed = performance.now() - started;
      // The first two rounds warm up.
      if (round < 0) continue;
      times[coding].push(elapsed);
      sizes[coding] += bytes.length;
      if (coding === "identity") pageBytes += bytes.length;
    }
  }
  const plainMs = median(times.identity);
  const line = codings.map((coding) =>
    `${coding} ${median(times[coding]).toFixed(1)} ms (${
      (pageBytes / rounds / median(times[coding]) / 1000).toFixed(0)
    } MB/s of page, ${(sizes[coding] / rounds / 1e6).toFixed(2)} MB sent)`
  );
  console.log(`cold 10,000-row pages, each asked once (medians of ${rounds}): ${line.join("; ")}`);
  for (const coding of ["gzip", "br"] as const) {
    const ratio = plainMs / median(times[coding]);
    results.push({
      name: `cold page ${coding}`,
      measure: `page bytes/s with ${coding} / uncompressed`,
      ratio,
      target: ">= 0.5",
      pass: ratio >= 0.5,
    });
  }
}

report(results);

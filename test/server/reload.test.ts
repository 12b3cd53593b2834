import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import {
  type DatasetSpec,
  removeDataset,
  versionOf,
  writeAtomically,
  writeDataset,
} from "../_helpers/datasets.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";

const root = mkdtempSync(join(tmpdir(), "tributary-reload-"));
after(() => rmSync(root, { recursive: true, force: true }));
const BASE = "/v1/odata/v4";
const KEY = "reload-test-key";
const ADMIN = "reload-admin-key";
let dirs = 0;

const STEADY: DatasetSpec = {
  doi: "10.25976/stdy-0001",
  name: "Steady",
  version: 1,
  rows: 300,
  locations: 6,
  created: "2015-01-01T00:00:00Z",
};
const GONE: DatasetSpec = {
  doi: "10.25976/gone-0002",
  name: "Gone",
  version: 1,
  rows: 40,
  created: "2016-01-01T00:00:00Z",
};

/** A datasets folder with the given datasets, and a water-only server on it with the per-key limits off. */
async function serve(
  datasets: Readonly<Record<string, DatasetSpec>>,
  env: Record<string, string> = {},
): Promise<{ dir: string; url: string; started: Started }> {
  const dir = join(root, `d${++dirs}`);
  for (const [folder, spec] of Object.entries(datasets)) writeDataset(dir, folder, spec);
  const started = startServer({
    SERVICES: "water",
    DATA_DIR: dir,
    API_KEYS_FILE: "",
    API_KEYS: KEY,
    RATE_LIMIT_PER_SECOND: "0",
    RATE_LIMIT_CONCURRENCY: "0",
    ...env,
  });
  return { dir, url: await listeningUrl(started), started };
}

/** Waits until the server's output from `from` on matches, and returns where the match ends. */
async function outputMatching(started: Started, pattern: RegExp, from = 0): Promise<number> {
  for (;;) {
    const output = started.output().slice(from);
    const match = pattern.exec(output);
    if (match !== null) return from + match.index + match[0].length;
    if (started.child.exitCode !== null) throw new Error(`server exited: ${started.errors()}`);
    await once(started.child.stdout!, "data");
  }
}

async function getJson(
  url: string,
  target: string,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}${target}`, { headers: { "x-api-key": KEY } });
  return { status: response.status, body: await response.json() as Record<string, unknown> };
}

function filterOn(spec: DatasetSpec): string {
  return encodeURIComponent(`DOI eq '${spec.doi}'`);
}

/** The rows of a page: its `value`. */
function rowsOf(body: Record<string, unknown>): Record<string, unknown>[] {
  return body["value"] as Record<string, unknown>[];
}

async function stop(started: Started): Promise<void> {
  started.child.kill("SIGTERM");
  assert.equal((await once(started.child, "exit"))[0], 0);
}

describe("server.ts: live datasets", () => {
  it(
    "replaces a dataset on SIGHUP under load: no request fails, and every answer is wholly the old version or wholly the new",
    { timeout: 120_000 },
    async (t) => {
      const v1: DatasetSpec = {
        doi: "10.25976/swap-0003",
        name: "Swap",
        version: 1,
        rows: 600,
        locations: 5,
        created: "2017-01-01T00:00:00Z",
      };
      const v2: DatasetSpec = { ...v1, version: 2, rows: 20_000, locations: 8 };
      const { dir, url, started } = await serve({ steady: STEADY, swap: v1 });
      const steadyAnswer = JSON.stringify(
        rowsOf(
          (await getJson(
            url,
            `${BASE}/Observations?$top=1000&$select=Id,LocationId,ResultValue&$filter=${
              filterOn(STEADY)
            }`,
          )).body,
        ),
      );
      const versions = new Map([[1, v1], [2, v2]]);
      // v1's ids follow Steady's; v2's follow every id handed out before it.
      const idRanges = new Map([[1, [STEADY.rows + 1, STEADY.rows + v1.rows]], [2, [
        STEADY.rows + v1.rows + 1,
        STEADY.rows + v1.rows + v2.rows,
      ]]]);
      /** Reads one answer of the swapped dataset and tells which version it wholly is; throws when it is not one. */
      const checks: ((i: number) => Promise<number>)[] = [
        async (i) => {
          const { status, body } = await getJson(
            url,
            `${BASE}/Observations?$top=50&$select=Id,ResultValue&$skip=${i % 7}&$filter=${
              filterOn(v1)
            }`,
          );
          assert.equal(status, 200, JSON.stringify(body));
          const rows = rowsOf(body);
          const version = versionOf(rows[0]!["ResultValue"]);
          const [from, to] = idRanges.get(version)!;
          assert.equal(rows.length, 50);
          for (const row of rows) {
            assert.equal(versionOf(row["ResultValue"]), version);
            assert.ok(
              Number(row["Id"]) >= from! && Number(row["Id"]) <= to!,
              `Id ${String(row["Id"])} of version ${version}`,
            );
          }
          return version;
        },
        async () => {
          const response = await fetch(
            `${url}${BASE}/Observations?$format=csv&$select=ResultValue&$filter=${filterOn(v1)}`,
            { headers: { "x-api-key": KEY } },
          );
          assert.equal(response.status, 200);
          const values = (await response.text()).trim().split("\r\n").slice(1);
          const version = versionOf(values[0]);
          assert.equal(values.length, versions.get(version)!.rows);
          assert.ok(values.every((value) => versionOf(value) === version));
          return version;
        },
        async () => {
          const { status, body } = await getJson(
            url,
            `${BASE}/Locations?$top=100&$select=Id,Name&$filter=${filterOn(v1)}`,
          );
          assert.equal(status, 200);
          const names = rowsOf(body).map((row) => String(row["Name"]));
          const version = Number(/ v(\d+) /.exec(names[0]!)![1]);
          assert.equal(names.length, versions.get(version)!.locations);
          assert.ok(names.every((name) => name.includes(` v${version} `)));
          return version;
        },
        async () => {
          const { status, body } = await getJson(
            url,
            `${BASE}/Observations?$count=true&$filter=${filterOn(v1)}`,
          );
          assert.equal(status, 200);
          const version = [...versions].find(([, spec]) => spec.rows === body["value"])?.[0];
          assert.ok(version !== undefined, `count ${String(body["value"])}`);
          return version;
        },
        async () => {
          const { status, body } = await getJson(
            url,
            `${BASE}/Observations?$top=1000&$select=Id,LocationId,ResultValue&$filter=${
              filterOn(STEADY)
            }`,
          );
          assert.equal(status, 200);
          assert.equal(
            JSON.stringify(rowsOf(body)),
            steadyAnswer,
            "the unchanged dataset answers the same",
          );
          return 0;
        },
      ];
      const CLIENTS = 4;
      const MAX_REQUESTS = 3000;
      let reloadedAt = Infinity;
      let sentAt = Infinity;
      const counts = Array.from({ length: CLIENTS }, () => ({ before: 0, during: 0, after: 0 }));
      let ready: () => void = () => {};
      const allReady = new Promise<void>((resolve) => (ready = resolve));
      // Each client asks one request after another and records the version of each answer, in order.
      const clients = Array.from({ length: CLIENTS }, async (_, c) => {
        const seen: number[] = [];
        for (let i = 0;; i++) {
          assert.ok(
            i < MAX_REQUESTS,
            `client ${c} made ${MAX_REQUESTS} requests and the reload was not over`,
          );
          const startedAt = started.output().length;
          const version = await checks[(i + c) % checks.length]!(i);
          if (version !== 0) seen.push(version);
          if (startedAt >= reloadedAt && version !== 0) {
            assert.equal(version, 2, "asked after the reload was logged");
          }
          if (startedAt >= reloadedAt) {
            counts[c]!.after++;
          } else if (startedAt >= sentAt) {
            counts[c]!.during++;
          } else counts[c]!.before++;
          if (counts[c]!.before === 5 && counts.every((count) => count.before >= 5)) ready();
          if (counts[c]!.after >= 10) return seen;
        }
      });
      await allReady;
      writeDataset(dir, "swap", v2);
      sentAt = started.output().length;
      started.child.kill("SIGHUP");
      const end = await outputMatching(started, /Datasets reloaded from [^\n]*\n/, sentAt);
      reloadedAt = end;
      assert.match(
        started.output().slice(sentAt, end),
        /0 added, 1 replaced, 0 removed, 1 unchanged, 0 not loaded/,
      );
      const sequences = await Promise.all(clients);
      t.diagnostic(
        `answers per client before, during and after the reload: ${JSON.stringify(counts)}`,
      );
      for (const seen of sequences) {
        // In order: old answers, then new ones, never old after new.
        const firstNew = seen.indexOf(2);
        assert.ok(firstNew > 0, `saw ${JSON.stringify(seen)}`);
        assert.ok(
          seen.slice(firstNew).every((version) => version === 2),
          `old after new: ${JSON.stringify(seen)}`,
        );
      }
      assert.doesNotMatch(started.errors(), /Unexpected error|SIGHUP:/);
      await stop(started);
    },
  );

  it(
    "adds one dataset and removes another on SIGHUP; an unchanged dataset's next link pages on, one into the removed one is refused",
    { timeout: 60_000 },
    async () => {
      const { dir, url, started } = await serve({ steady: STEADY, gone: GONE });
      const whole = rowsOf(
        (await getJson(
          url,
          `${BASE}/Observations?$top=10000&$select=Id,ResultValue&$filter=${filterOn(STEADY)}`,
        )).body,
      );
      const first = (await getJson(
        url,
        `${BASE}/Observations?$top=40&$select=Id,ResultValue&$filter=${filterOn(STEADY)}`,
      )).body;
      const gonePage =
        (await getJson(url, `${BASE}/Observations?$top=10&$select=Id&$filter=${filterOn(GONE)}`))
          .body;
      const added: DatasetSpec = {
        doi: "10.25976/newd-0004",
        name: "Added",
        version: 1,
        rows: 25,
        created: "2001-01-01T00:00:00Z",
      };
      removeDataset(dir, "gone");
      writeDataset(dir, "added", added);
      const from = started.output().length;
      started.child.kill("SIGHUP");
      const end = await outputMatching(started, /Datasets reloaded from [^\n]*\n/, from);
      const log = started.output().slice(from, end);
      assert.match(log, /1 added, 0 replaced, 1 removed, 1 unchanged/);
      assert.match(log, /Added added \(10\.25976\/newd-0004\): 25 observations/);
      assert.match(log, /Removed gone \(10\.25976\/gone-0002\)/);
      // The unchanged dataset's next links page on to exactly the rows they would have given.
      const rows = [...rowsOf(first)];
      let link = first["@odata.nextLink"] as string | undefined;
      let pages = 0;
      while (link !== undefined) {
        const response = await fetch(link, { headers: { "x-api-key": KEY } });
        assert.equal(response.status, 200);
        const page = await response.json() as Record<string, unknown>;
        rows.push(...rowsOf(page));
        link = page["@odata.nextLink"] as string | undefined;
        pages++;
      }
      assert.equal(pages, 7);
      assert.deepEqual(rows, whole);
      const datasets = rowsOf((await getJson(url, `${BASE}/Metadata?$select=DOI`)).body).map((
        row,
      ) => row["DOI"]).sort();
      assert.deepEqual(datasets, [added.doi, STEADY.doi]);
      const addedIds = rowsOf(
        (await getJson(url, `${BASE}/Observations?$top=100&$select=Id&$filter=${filterOn(added)}`))
          .body,
      ).map((row) => row["Id"]);
      assert.deepEqual(
        addedIds,
        Array.from({ length: 25 }, (_, i) => STEADY.rows + GONE.rows + 1 + i),
      );
      const refused = await fetch(gonePage["@odata.nextLink"] as string, {
        headers: { "x-api-key": KEY },
      });
      assert.equal(refused.status, 410);
      assert.equal(
        (await refused.json() as { error: { code: string } }).error.code,
        "ERR_WATER_TOKEN_GONE",
      );
      await stop(started);
    },
  );

  it(
    "keeps the old version of a dataset whose replacement is broken serving, and reports it in the admin answer and the log",
    { timeout: 60_000 },
    async () => {
      const { dir, url, started } = await serve({ steady: STEADY, gone: GONE }, {
        ADMIN_API_KEYS: ADMIN,
      });
      const target = `${BASE}/Observations?$top=10000&$select=Id,LocationId,ResultValue&$filter=${
        filterOn(GONE)
      }`;
      const before = rowsOf((await getJson(url, target)).body);
      writeAtomically(join(dir, "gone", "data.csv"), "Name,Value\r\nx,1\r\n");
      const from = started.output().length;
      const response = await fetch(`${url}/admin/datasets/reload`, {
        method: "POST",
        headers: { authorization: `Bearer ${ADMIN}` },
      });
      assert.equal(response.status, 200);
      const report = await response.json() as {
        datasets: { folder: string; change: string }[];
        failures: { folder: string; file: string; line: number; kept: boolean; message: string }[];
      };
      assert.deepEqual(report.datasets.map((d) => [d.folder, d.change]), [["steady", "unchanged"], [
        "gone",
        "kept",
      ]]);
      assert.equal(report.failures.length, 1);
      assert.deepEqual([
        report.failures[0]!.folder,
        report.failures[0]!.kept,
        report.failures[0]!.line,
      ], ["gone", true, 1]);
      assert.equal(report.failures[0]!.file, join(dir, "gone", "data.csv"));
      assert.match(report.failures[0]!.message, /required/);
      const end = await outputMatching(
        started,
        /\(the version loaded before keeps serving\)\n/,
        from,
      );
      assert.match(
        started.output().slice(from, end),
        /Not loaded: [^\n]*gone\/data\.csv:1:\d+: [^\n]*required/,
      );
      assert.deepEqual(rowsOf((await getJson(url, target)).body), before);
      // SIGHUP reports it the same way.
      const again = started.output().length;
      started.child.kill("SIGHUP");
      const logged = await outputMatching(started, /Datasets reloaded from [^\n]*\n/, again);
      assert.match(
        started.output().slice(again, logged),
        / {2}Not loaded: [^\n]*gone\/data\.csv[^\n]*\nDatasets reloaded [^\n]*1 not loaded \(1 kept as they were\)/,
      );
      assert.deepEqual(rowsOf((await getJson(url, target)).body), before);
      await stop(started);
    },
  );

  it(
    "refuses the admin reload without an admin key, and with a data key",
    { timeout: 60_000 },
    async () => {
      const { dir, url, started } = await serve({ steady: STEADY }, { ADMIN_API_KEYS: ADMIN });
      writeDataset(dir, "gone", GONE);
      const reload = (headers: Record<string, string>) =>
        fetch(`${url}/admin/datasets/reload`, { method: "POST", headers });
      const without = await reload({});
      assert.equal(without.status, 401);
      assert.match(String(without.headers.get("www-authenticate")), /^Bearer /);
      assert.equal((await reload({ authorization: `Bearer ${KEY}` })).status, 403);
      assert.equal((await reload({ "x-api-key": KEY })).status, 403);
      assert.equal(
        (await fetch(`${url}/admin/datasets`, { headers: { "x-api-key": KEY } })).status,
        403,
      );
      assert.doesNotMatch(started.output(), /Datasets reloaded/);
      const metadata = rowsOf((await getJson(url, `${BASE}/Metadata?$select=DOI`)).body);
      assert.deepEqual(metadata.map((row) => row["DOI"]), [STEADY.doi], "nothing was reloaded");
      await stop(started);
    },
  );
});

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { brotliDecompressSync } from "node:zlib";
import { indexApiKeys, parseApiKey } from "../../lib/http/mod.ts";
import {
  createDatasetsAdmin,
  LiveDatasets,
  loadDatasets,
  type LoadedDatasets,
  reloadDatasets,
  type ReloadReport,
  type WaterStore,
} from "../../lib/water/mod.ts";
import {
  type DatasetSpec,
  removeDataset,
  versionOf,
  writeAtomically,
  writeDataset,
} from "../_helpers/datasets.ts";
import { bodyBytes, callHandler, makeRequest } from "../_helpers/http.ts";
import { call, type Page, waterHandler } from "../_helpers/water.ts";

const root = mkdtempSync(join(tmpdir(), "tributary-live-"));
after(() => rmSync(root, { recursive: true, force: true }));
const BASE = "/v1/odata/v4";
let folders = 0;

/** A fresh datasets folder holding the given datasets. */
function datasetsDir(datasets: Readonly<Record<string, DatasetSpec>>): string {
  const dir = join(root, `d${++folders}`);
  for (const [folder, spec] of Object.entries(datasets)) writeDataset(dir, folder, spec);
  return dir;
}

const A: DatasetSpec = {
  doi: "10.25976/aaaa-0001",
  name: "Alpha",
  version: 1,
  rows: 40,
  locations: 4,
  created: "2018-01-01T00:00:00Z",
};
const B: DatasetSpec = {
  doi: "10.25976/bbbb-0002",
  name: "Bravo",
  version: 1,
  rows: 30,
  created: "2019-01-01T00:00:00Z",
};
const C: DatasetSpec = {
  doi: "10.25976/cccc-0003",
  name: "Charlie",
  version: 1,
  rows: 20,
  created: "2020-01-01T00:00:00Z",
};

/** Every row of a collection a store serves (all fields), by the dataset's DOI. */
async function rowsByDoi(
  store: WaterStore,
  collection: "Records" | "Locations" | "Observations",
): Promise<Map<string, Record<string, unknown>[]>> {
  const result = await call(waterHandler(store), `${BASE}/${collection}?$top=10000`);
  assert.equal(result.status, 200, result.text);
  const out = new Map<string, Record<string, unknown>[]>();
  for (const row of (result.json() as Page).value) {
    const doi = String(row["DOI"]);
    out.set(doi, [...(out.get(doi) ?? []), row]);
  }
  return out;
}

function ids(rows: readonly Record<string, unknown>[] | undefined): number[] {
  return (rows ?? []).map((row) => Number(row["Id"]));
}

describe("reloadDatasets()", () => {
  it("keeps an unchanged dataset's rows under their ids, gives a replaced or added one ids after every id handed out, and drops a removed one", async () => {
    const dir = datasetsDir({ a: A, b: B, c: C });
    const first = await loadDatasets(dir);
    const before = {
      records: await rowsByDoi(first.store, "Records"),
      locations: await rowsByDoi(first.store, "Locations"),
    };
    assert.deepEqual(
      ids(before.records.get(B.doi)),
      Array.from({ length: 30 }, (_, i) => 41 + i),
      "a first load numbers from 1 in CreateTimestamp order",
    );
    writeDataset(dir, "b", { ...B, version: 2, rows: 35 });
    removeDataset(dir, "c");
    // Added with an earlier CreateTimestamp than every other: it still comes after them.
    writeDataset(dir, "d", {
      doi: "10.25976/dddd-0004",
      name: "Delta",
      version: 1,
      rows: 10,
      created: "2000-01-01T00:00:00Z",
    });
    const next = await reloadDatasets(dir, first);
    const after = {
      records: await rowsByDoi(next.store, "Records"),
      locations: await rowsByDoi(next.store, "Locations"),
    };
    assert.deepEqual(after.records.get(A.doi), before.records.get(A.doi));
    assert.deepEqual(after.locations.get(A.doi), before.locations.get(A.doi));
    // Those read come after observation 90 and location 10, the last handed out, in CreateTimestamp order.
    assert.deepEqual(
      ids(after.records.get("10.25976/dddd-0004")),
      Array.from({ length: 10 }, (_, i) => 91 + i),
    );
    assert.deepEqual(ids(after.locations.get("10.25976/dddd-0004")), [11, 12, 13]);
    assert.deepEqual(ids(after.records.get(B.doi)), Array.from({ length: 35 }, (_, i) => 101 + i));
    assert.ok(after.records.get(B.doi)!.every((row) => versionOf(row["ResultValue"]) === 2));
    assert.deepEqual(ids(after.locations.get(B.doi)), [14, 15, 16]);
    assert.equal(after.records.get(C.doi), undefined);
    assert.deepEqual(next.report.datasets.map((d) => [d.folder, d.change]), [["a", "unchanged"], [
      "d",
      "added",
    ], ["b", "replaced"]]);
    assert.deepEqual(next.report.removed.map((d) => d.folder), ["c"]);
    assert.deepEqual(next.store.issuedIds, { location: 16, observation: 135 });
  });

  it("answers a filter on an unchanged dataset's location ids as before, and one on a replaced dataset's old ids with none", async () => {
    const dir = datasetsDir({ a: A, b: B });
    const first = await loadDatasets(dir);
    writeDataset(dir, "a", { ...A }); // the same content written again: a new file, so a new version with new ids
    const next = await reloadDatasets(dir, first);
    assert.deepEqual(next.report.datasets.map((d) => [d.folder, d.change]), [["b", "unchanged"], [
      "a",
      "replaced",
    ]]);
    const query = `${BASE}/Observations?$top=10000&$select=Id,LocationId,ResultValue&$filter=${
      encodeURIComponent("LocationId in (6, 7) or LocationId eq 1")
    }`;
    const before = (await call(waterHandler(first.store), query)).json() as Page;
    const later = (await call(waterHandler(next.store), query)).json() as Page;
    assert.ok(
      before.value.some((row) => row["LocationId"] === 1) &&
        before.value.some((row) => row["LocationId"] === 7),
    );
    assert.deepEqual(later.value, before.value.filter((row) => row["LocationId"] !== 1));
  });

  it("keeps the version served of a dataset whose new files are broken, ids and all, and reports it", async () => {
    const dir = datasetsDir({ a: A, b: B, c: C });
    const first = await loadDatasets(dir);
    const before = {
      records: await rowsByDoi(first.store, "Records"),
      locations: await rowsByDoi(first.store, "Locations"),
    };
    writeAtomically(join(dir, "a", "data.csv"), "Id,Name\r\n1,x\r\n");
    writeAtomically(join(dir, "b", "metadata.json"), '{ "DOI": ');
    writeDataset(dir, "c", { ...C, version: 2, doi: A.doi });
    const next = await reloadDatasets(dir, first);
    const after = {
      records: await rowsByDoi(next.store, "Records"),
      locations: await rowsByDoi(next.store, "Locations"),
    };
    assert.deepEqual(after, before);
    assert.deepEqual(next.report.datasets.map((d) => [d.folder, d.change]), [["a", "kept"], [
      "b",
      "kept",
    ], ["c", "kept"]]);
    assert.deepEqual(
      next.report.failures.map((f) => [f.folder, f.kept, f.file.split("/").slice(-1)[0]]).sort(),
      [
        ["a", true, "data.csv"],
        ["b", true, "metadata.json"],
        ["c", true, "data.csv"],
      ],
    );
    assert.match(
      next.report.failures.find((f) => f.folder === "a")!.message,
      /"MonitoringLocationID"|required/,
    );
    // The metadata answers as before too, TemporalExtent and regions included.
    const metadata = (store: WaterStore) =>
      call(waterHandler(store), `${BASE}/Metadata?$top=100`).then((r) => r.json());
    assert.deepEqual(await metadata(next.store), await metadata(first.store));
    const regions = (store: WaterStore) =>
      call(
        waterHandler(store),
        `${BASE}/Locations?$select=Id&$filter=${encodeURIComponent("RegionId eq 'hub.atlantic'")}`,
      ).then((r) => r.json());
    assert.deepEqual(await regions(next.store), await regions(first.store));
    // Fixed, it is read again, with new ids.
    writeDataset(dir, "a", { ...A, version: 3 });
    const fixed = await reloadDatasets(dir, next);
    assert.deepEqual(fixed.report.datasets.map((d) => [d.folder, d.change]), [["b", "kept"], [
      "c",
      "kept",
    ], ["a", "replaced"]]);
    assert.ok(Math.min(...ids((await rowsByDoi(fixed.store, "Records")).get(A.doi))) > 90);
  });

  it("answers a stored dataset's data file that is gone as not loaded, keeping the version served", async () => {
    const dir = datasetsDir({ a: A });
    const first = await loadDatasets(dir);
    rmSync(join(dir, "a", "data.csv"));
    const next = await reloadDatasets(dir, first);
    assert.deepEqual(next.report.datasets.map((d) => [d.folder, d.change]), [["a", "kept"]]);
    assert.equal(next.store.observationCount, 40);
  });

  it("reads nothing again when nothing changed, and keeps every id", async () => {
    const dir = datasetsDir({ a: A, b: B });
    const first = await loadDatasets(dir);
    const next = await reloadDatasets(dir, first);
    assert.deepEqual(next.report.datasets.map((d) => d.change), ["unchanged", "unchanged"]);
    assert.deepEqual(
      await rowsByDoi(next.store, "Records"),
      await rowsByDoi(first.store, "Records"),
    );
    assert.equal(next.store.column("observation.Id")?.kind, "rownumber");
  });
});

describe("next links across a reload", () => {
  it("page on through an unchanged dataset to the rows they gave before, in JSON and CSV, ordered or not", async () => {
    const dir = datasetsDir({ a: A, b: B, c: C });
    const live = await LiveDatasets.open(dir);
    const handler = waterHandler(live);
    const queries = [
      `${BASE}/Observations?$top=7&$select=Id,ResultValue&$filter=${
        encodeURIComponent(`DOI eq '${B.doi}'`)
      }`,
      `${BASE}/Observations?$top=7&$select=Id,ResultValue&$orderby=ResultValue%20desc&$filter=${
        encodeURIComponent(`DOI eq '${B.doi}'`)
      }`,
      `${BASE}/Locations?$top=1&$select=Id,Name&$filter=${encodeURIComponent(`DOI eq '${A.doi}'`)}`,
    ];
    const firsts: Page[] = [];
    const wholes: unknown[][] = [];
    for (const query of queries) {
      firsts.push((await call(handler, query)).json() as Page);
      wholes.push(
        ((await call(handler, query.replace(/\$top=\d+/, "$top=1000"))).json() as Page).value,
      );
    }
    writeDataset(dir, "a", { ...A, version: 2 }); // replaced: before B in id order until now
    removeDataset(dir, "c");
    writeDataset(dir, "e", {
      doi: "10.25976/eeee-0005",
      name: "Echo",
      version: 1,
      rows: 5,
      created: "2001-01-01T00:00:00Z",
    });
    await live.reload();
    for (const [i, query] of queries.entries()) {
      if (i === 2) {
        // A was replaced: its next link is refused, never answered with other rows.
        assert.equal(
          (await call(handler, firsts[i]!["@odata.nextLink"]!.replace("http://localhost:8000", "")))
            .status,
          410,
        );
        continue;
      }
      const rows = [...firsts[i]!.value];
      let link = firsts[i]!["@odata.nextLink"];
      while (link !== undefined) {
        const result = await call(handler, link.replace("http://localhost:8000", ""));
        assert.equal(result.status, 200, result.text);
        const page = result.json() as Page;
        rows.push(...page.value);
        link = page["@odata.nextLink"];
      }
      assert.deepEqual(rows, wholes[i], query);
    }
    // CSV from a token of the unchanged dataset: the rest of it.
    const csv = await call(
      handler,
      `${BASE}/Observations?$format=csv&$select=Id&$skiptoken=Id:60&$filter=${
        encodeURIComponent(`DOI eq '${B.doi}'`)
      }`,
    );
    assert.equal(csv.status, 200);
    assert.deepEqual(
      csv.text.trim().split("\r\n").slice(1).map(Number),
      Array.from({ length: 10 }, (_, i) => 61 + i),
    );
  });

  it("refuses with 410 a next link into a dataset replaced or removed since, ordered or not, JSON or CSV", async () => {
    const dir = datasetsDir({ a: A, b: B, c: C });
    const live = await LiveDatasets.open(dir);
    const handler = waterHandler(live);
    writeDataset(dir, "a", { ...A, version: 2 });
    removeDataset(dir, "c");
    await live.reload();
    const targets = [
      `${BASE}/Observations?$top=5&$skiptoken=Id:12`,
      `${BASE}/Observations?$top=5&$skiptoken=Id:85`,
      `${BASE}/Observations?$top=5&$orderby=ResultValue&$skiptoken=Id:12`,
      `${BASE}/Observations?$format=csv&$skiptoken=Id:12`,
      `${BASE}/Records?$top=5&$skiptoken=Id:40`,
      `${BASE}/Locations?$top=5&$skiptoken=Id:2`,
      `${BASE}/Locations?$top=5&$skiptoken=Id:10`,
    ];
    for (const target of targets) {
      const result = await call(handler, target);
      assert.equal(result.status, 410, `${target}: ${result.text}`);
      assert.equal(
        (result.json() as { error: { code: string } }).error.code,
        "ERR_WATER_TOKEN_GONE",
      );
    }
    // B's rows, unchanged, still continue; ids past every one handed out are simply the end; a removed row has no entity.
    assert.equal((await call(handler, `${BASE}/Observations?$top=5&$skiptoken=Id:41`)).status, 200);
    assert.deepEqual(
      ((await call(handler, `${BASE}/Observations?$skiptoken=Id:100000`)).json() as Page).value,
      [],
    );
    assert.equal((await call(handler, `${BASE}/Observations(12)`)).status, 404);
    assert.equal((await call(handler, `${BASE}/Observations(41)`)).status, 200);
  });
});

describe("createWaterService() over live datasets", () => {
  it("serves no rendered row or compressed page of the store before a reload", async () => {
    const dir = datasetsDir({ a: { ...A, rows: 400 }, b: B });
    const live = await LiveDatasets.open(dir);
    const handler = waterHandler(live);
    const target = { path: `${BASE}/Observations`, query: "$top=300" };
    const compressed = {
      ...target,
      headers: { "x-api-key": "test-key", "accept-encoding": "gzip, deflate, br" },
    };
    const plain = { ...target, headers: { "x-api-key": "test-key" } };
    // Twice each, so that the rows are in the render cache and the page among the compressed ones.
    for (let i = 0; i < 2; i++) {
      assert.equal((await callHandler(handler, makeRequest(plain))).status, 200);
      assert.equal(
        (await callHandler(handler, makeRequest(compressed))).headers?.["content-encoding"],
        "br",
      );
    }
    writeDataset(dir, "a", { ...A, rows: 400, version: 2 });
    await live.reload();
    const fresh = await bodyBytes(await callHandler(waterHandler(live.store), makeRequest(plain)));
    const again = await bodyBytes(await callHandler(handler, makeRequest(plain)));
    const squeezed = await callHandler(handler, makeRequest(compressed));
    assert.equal(squeezed.headers?.["content-encoding"], "br");
    assert.deepEqual(again, fresh);
    assert.deepEqual(brotliDecompressSync(await bodyBytes(squeezed)), fresh);
    const first = (JSON.parse(fresh.toString()) as Page).value[0]!;
    assert.equal(first["DOI"], B.doi, "B comes first now; A's new version is after it");
  });

  it("answers a request in flight from the store it started with", async () => {
    const dir = datasetsDir({ a: { ...A, rows: 5000, locations: 1 } });
    const live = await LiveDatasets.open(dir);
    const handler = waterHandler(live);
    const response = await callHandler(
      handler,
      makeRequest({
        path: `${BASE}/Observations`,
        query: "$format=csv&$select=ResultValue",
        headers: { "x-api-key": "test-key" },
      }),
    );
    const chunks = response.body as AsyncIterable<string>;
    const iterator = chunks[Symbol.asyncIterator]();
    const head = await iterator.next();
    writeDataset(dir, "a", { ...A, rows: 10, version: 2 });
    await live.reload();
    let text = String(head.value);
    for (let next = await iterator.next(); next.done !== true; next = await iterator.next()) {
      text += next.value;
    }
    const values = text.trim().split("\r\n").slice(1);
    assert.equal(values.length, 5000);
    assert.ok(values.every((value) => versionOf(value) === 1));
    const now = await call(handler, `${BASE}/Observations?$format=csv&$select=ResultValue`);
    assert.deepEqual(now.text.trim().split("\r\n").slice(1).map(versionOf), Array(10).fill(2));
  });
});

describe("LiveDatasets", () => {
  /** A reload function the test finishes by hand, counting calls and never letting two run at once. */
  function manualReload(start: LoadedDatasets) {
    const pending: {
      resolve: (loaded: LoadedDatasets) => void;
      reject: (error: unknown) => void;
    }[] = [];
    let calls = 0;
    let running = 0;
    let most = 0;
    let generation = 0;
    const reload = (_dir: string, previous: LoadedDatasets): Promise<LoadedDatasets> => {
      calls++;
      most = Math.max(most, ++running);
      return new Promise<LoadedDatasets>((resolve, reject) => {
        pending.push({
          resolve: (loaded) => {
            running--;
            resolve(loaded);
          },
          reject: (error) => {
            running--;
            reject(error);
          },
        });
      }).then((loaded) =>
        loaded === start
          ? {
            ...previous,
            report: {
              ...previous.report,
              removed: [{ folder: `g${++generation}`, id: "", doi: "" }],
            },
          }
          : loaded
      );
    };
    return { reload, pending, calls: () => calls, most: () => most };
  }

  it("runs one reload at a time and joins those asked for meanwhile into one more", async () => {
    const loaded = await loadDatasets(datasetsDir({ a: A }));
    const manual = manualReload(loaded);
    const live = new LiveDatasets("unused", loaded, { reload: manual.reload });
    const first = live.reload();
    const second = live.reload();
    const third = live.reload();
    assert.equal(live.reloading, true);
    assert.equal(manual.calls(), 1);
    assert.equal(second, third);
    manual.pending[0]!.resolve(loaded);
    const firstReport: ReloadReport = await first;
    assert.equal(firstReport.removed[0]!.folder, "g1");
    // The joined reload starts as the first ends.
    assert.equal(manual.calls(), 2);
    const fourth = live.reload();
    assert.notEqual(
      fourth,
      second,
      "asked while the second runs: joined into a third, since the second may have read the files already",
    );
    manual.pending[1]!.resolve(loaded);
    assert.equal((await second).removed[0]!.folder, "g2");
    assert.equal((await third).removed[0]!.folder, "g2");
    assert.equal(manual.calls(), 3);
    manual.pending[2]!.resolve(loaded);
    assert.equal((await fourth).removed[0]!.folder, "g3");
    assert.equal(manual.most(), 1);
    assert.equal(live.reloading, false);
  });

  it("keeps the store served when a reload fails, and reloads again after", async () => {
    const loaded = await loadDatasets(datasetsDir({ a: A }));
    const manual = manualReload(loaded);
    const live = new LiveDatasets("unused", loaded, { reload: manual.reload });
    const failing = live.reload();
    manual.pending[0]!.reject(new Error("disk on fire"));
    await assert.rejects(failing, /disk on fire/);
    assert.equal(live.store, loaded.store);
    assert.equal(live.reloading, false);
    const next = live.reload();
    manual.pending[1]!.resolve(loaded);
    assert.equal((await next).removed[0]!.folder, "g1");
  });

  it("serves a new store from the moment it is built, and the old one until then", async () => {
    const dir = datasetsDir({ a: A });
    const live = await LiveDatasets.open(dir);
    const before = live.store;
    writeDataset(dir, "b", B);
    const reloading = live.reload();
    assert.equal(live.store, before);
    await reloading;
    assert.notEqual(live.store, before);
    assert.equal(live.store.datasetCount, 2);
  });
});

describe("createDatasetsAdmin()", () => {
  const KEY = "admin-secret";

  it("refuses a request without an admin key (401, with a challenge) or with another key (403)", async () => {
    const live = await LiveDatasets.open(datasetsDir({ a: A }));
    const admin = createDatasetsAdmin(live, { keys: indexApiKeys([parseApiKey("admin", KEY)]) });
    const post = (headers: Record<string, string>) =>
      callHandler(admin, makeRequest({ method: "POST", path: "/admin/datasets/reload", headers }));
    const without = await post({}).catch((
      error: { status?: number; code?: string; headers?: Record<string, string> },
    ) => error);
    assert.equal((without as { code?: string }).code, "ERR_HTTP_UNAUTHORIZED");
    assert.match(
      String((without as { headers?: Record<string, string> }).headers?.["www-authenticate"]),
      /^Bearer /,
    );
    await assert.rejects(post({ authorization: "Bearer test-key" }), {
      code: "ERR_HTTP_FORBIDDEN",
    });
    await assert.rejects(post({ authorization: `Basic ${btoa(`admin:${KEY}`)}` }), {
      code: "ERR_HTTP_UNAUTHORIZED",
    });
    const none = createDatasetsAdmin(live, { keys: indexApiKeys([]) });
    await assert.rejects(
      callHandler(
        none,
        makeRequest({
          method: "POST",
          path: "/admin/datasets/reload",
          headers: { authorization: `Bearer ${KEY}` },
        }),
      ),
      { code: "ERR_HTTP_FORBIDDEN", message: /ADMIN_API_KEYS/ },
    );
    assert.equal(live.loaded.report.removed.length, 0);
    assert.equal(live.reloading, false);
  });

  it("reloads with an admin key and answers the report; GET answers the last one", async () => {
    const dir = datasetsDir({ a: A, b: B });
    const live = await LiveDatasets.open(dir);
    const heard: unknown[] = [];
    const admin = createDatasetsAdmin(live, {
      keys: indexApiKeys([parseApiKey("admin", KEY)]),
      onReload: (outcome) => heard.push(outcome),
    });
    writeAtomically(join(dir, "b", "data.csv"), "nonsense\r\n");
    writeDataset(dir, "c", C);
    for (const headers of [{ authorization: `Bearer ${KEY}` }, { "x-api-key": KEY }]) {
      const response = await callHandler(
        admin,
        makeRequest({ method: "POST", path: "/admin/datasets/reload", headers }),
      );
      assert.equal(response.status, 200);
      const body = JSON.parse((await bodyBytes(response)).toString()) as {
        datasets: { folder: string; change: string; observations: number }[];
        failures: { folder: string; kept: boolean }[];
        observations: number;
      };
      assert.deepEqual(body.datasets.map((d) => d.folder), ["a", "b", "c"]);
      assert.deepEqual(body.failures.map((f) => [f.folder, f.kept]), [["b", true]]);
      assert.equal(body.observations, 90);
    }
    assert.equal(heard.length, 2);
    const state = await callHandler(
      admin,
      makeRequest({ path: "/admin/datasets", headers: { authorization: `Bearer ${KEY}` } }),
    );
    const body = JSON.parse((await bodyBytes(state)).toString()) as {
      reloading: boolean;
      datasets: { change: string }[];
    };
    assert.equal(body.reloading, false);
    assert.deepEqual(body.datasets.map((d) => d.change), ["unchanged", "kept", "unchanged"]);
  });
});

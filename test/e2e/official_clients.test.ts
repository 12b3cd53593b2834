// The official DataStream clients against the server as `npm start` runs it
// (default limits, default compression), each client as it behaves on the
// wire: its headers, what it can decode, how it pages and partitions, and
// that it never pauses between requests (test/_helpers/datastream_clients.ts).
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import {
  ClientSession,
  type ClientSession as Session,
  OFFICIAL_CLIENTS,
  UndecodableAnswer,
} from "../_helpers/datastream_clients.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";

/** A key per client (each its own bucket, as each user has), besides the demo file's. */
const KEYS = OFFICIAL_CLIENTS.map((_, i) => `official-client-${i}`);
const SHELL_KEY = "shell-pacing";
const COUNT_KEY = "counting";
const REGION = "RegionId eq 'admin.4.ca.ns'";

let server: Started;
let url = "";

before(async () => {
  server = startServer({ API_KEYS: [...KEYS, SHELL_KEY, COUNT_KEY].join(",") });
  url = await listeningUrl(server);
});
after(() => {
  server.child.kill("SIGTERM");
});

/** What a query counts, asked once with a key of its own. */
async function count(collection: string, filter: string): Promise<number> {
  const counting = new ClientSession(OFFICIAL_CLIENTS[3]!, url, COUNT_KEY);
  const answer = await counting.get(
    `/v1/odata/v4/${collection}?$count=true&$filter=${encodeURIComponent(filter)}`,
  );
  assert.equal(answer.status, 200, answer.text);
  return (JSON.parse(answer.text) as { "@odata.count": number })["@odata.count"];
}

/** Above this many bytes the default server compresses an answer (COMPRESS_ABOVE_BYTES). */
const COMPRESS_ABOVE_BYTES = 1024;

/**
 * A call that pages, as the client follows it (its next link, every page
 * decoded with only what it can decode): several pages, each above the
 * compression threshold, each in the same coding, and as many rows as the
 * client's own `$count` of the query.
 * @returns the Ids of each page's rows
 */
async function pagedCall(
  session: Session,
  collection: string,
  top: number,
  filter?: string,
): Promise<unknown[][]> {
  const from = session.pages.length;
  const qs = filter === undefined ? { $top: top } : { $top: top, $filter: filter };
  const rows = await session.rows(collection, qs);
  const pages = session.pages.slice(from);
  const what = `${session.client.name}: ${collection} by ${top}`;
  assert.ok(pages.length >= 3, `${what}: ${pages.length} pages`);
  for (const page of pages) {
    assert.ok(page.bytes > COMPRESS_ABOVE_BYTES, `${what}: ${page.bytes} bytes at ${page.url}`);
  }
  // br only for the client that lists br with gzip and deflate (R), none for a bare br:
  // the first page and every next link alike.
  const { acceptEncoding, decodes } = session.client;
  const coding = acceptEncoding !== "br" && decodes.includes("br") ? "br" : "identity";
  assert.deepEqual(pages.map((page) => page.coding), pages.map(() => coding), what);
  const counted = await session.get(
    `/v1/odata/v4/${collection}?${
      session.client.encode(
        filter === undefined ? { $count: "true" } : {
          $count: "true",
          $filter: filter,
        },
      )
    }`,
  );
  assert.equal(counted.status, 200, counted.text);
  assert.equal(rows.length, Number((JSON.parse(counted.text) as { value: unknown }).value), what);
  const ids = rows.map((row) => row["Id"]);
  return pages.map((page, i) => {
    const start = pages.slice(0, i).reduce((sum, before) => sum + before.rows, 0);
    return ids.slice(start, start + page.rows);
  });
}

/** Each documented kind of call, as one client makes it; every answer read as that client reads it. */
async function documentedCalls(session: Session): Promise<Record<string, unknown>> {
  const metadata = await session.rows("Metadata", { $top: 100 });
  const locations = await session.rows("Locations", {
    $top: 10000,
    $select: "Id,Name,Latitude,Longitude",
    $filter: REGION,
  });
  // Pages (a smaller $top, as the shell client's --top gives), each above the compression
  // threshold, followed as the client follows them; then partitioned downloads.
  const paged = {
    metadata: await pagedCall(session, "Metadata", 2),
    locations: await pagedCall(session, "Locations", 6, REGION),
    observations: await pagedCall(
      session,
      "Observations",
      100,
      `LocationId eq ${String(locations[0]!["Id"])}`,
    ),
  };
  const observations = await session.partitioned(
    "Observations",
    10000,
    "Id,LocationId,CharacteristicName,ResultValue,ResultUnit",
    `CharacteristicName eq 'pH' and ${REGION}`,
  );
  const records = await session.partitioned(
    "Records",
    10000,
    undefined,
    `CharacteristicName eq 'Nitrate' and ${REGION}`,
  );
  const counted = await session.get(
    `/v1/odata/v4/Observations?${session.client.encode({ $count: "true", $filter: REGION })}`,
  );
  const plainCount = await session.get(
    `/v1/odata/v4/Observations/$count?${session.client.encode({ $filter: REGION })}`,
    "text/plain",
  );
  const csv = await session.get(
    `/v1/odata/v4/Records?${
      session.client.encode({ $format: "csv", $top: 10000, $filter: REGION })
    }`,
  );
  const csvByAccept = await session.get(
    `/v1/odata/v4/Observations?${session.client.encode({ $top: 10000, $filter: REGION })}`,
    "text/csv",
  );
  for (const answer of [counted, plainCount, csv, csvByAccept]) {
    assert.equal(answer.status, 200, answer.text.slice(0, 300));
  }
  assert.match(csv.text.split("\n")[0]!, /^Id,DOI,DatasetName,MonitoringLocationID,/);
  return {
    metadata: metadata.map((row) => row["Id"]),
    locations,
    paged,
    observations,
    records: records.map((row) => row["Id"]),
    count: JSON.parse(counted.text),
    plainCount: plainCount.text,
    csvLines: csv.text.trim().split("\n").length,
    csvByAcceptLines: csvByAccept.text.trim().split("\n").length,
  };
}

describe("the official DataStream clients against the default server", () => {
  /** The answers to compare each client's with: the same calls made by a client that takes no compression. */
  let reference: Record<string, unknown>;
  before(async () => {
    reference = await documentedCalls(
      new ClientSession({ ...OFFICIAL_CLIENTS[1]!, acceptEncoding: "identity" }, url, COUNT_KEY),
    );
  });

  for (const [i, client] of OFFICIAL_CLIENTS.entries()) {
    it(`${client.name} (Accept-Encoding: ${client.acceptEncoding}) reads every documented call, decoding only what it can`, async () => {
      const session = new ClientSession(client, url, KEYS[i]!);
      const result = await documentedCalls(session);
      for (const download of ["observations", "records"]) {
        assert.ok(
          (result[download] as unknown[]).length > 100,
          `a partitioned download of ${download} with rows`,
        );
      }
      assert.ok(
        session.statuses.every((status) => status === 200),
        `statuses: ${session.statuses.join(" ")}`,
      );
      assert.deepEqual(result, reference);
    });
  }

  it("compresses for the client that asks for br with gzip (R), not for those that name br alone", async () => {
    const target = (session: Session) =>
      `/v1/odata/v4/Observations?${session.client.encode({ $top: 1000, $filter: REGION })}`;
    const codings: Record<string, string> = {};
    // One at a time: a key has one request in flight at most.
    for (const client of OFFICIAL_CLIENTS) {
      const session = new ClientSession(client, url, COUNT_KEY);
      const answer = await session.get(target(session));
      assert.equal(answer.status, 200);
      codings[client.name] = answer.coding;
    }
    assert.deepEqual(codings, {
      "Python (datastream-py)": "identity",
      "shell (datastreamsh)": "identity",
      "JavaScript (datastreamjs)": "identity",
      "R (datastreamr)": "br",
    });
    assert.equal(
      (reference["count"] as { "@odata.count": number })["@odata.count"],
      await count("Observations", REGION),
    );
  });

  it("fails the way a client fails when an answer comes in a coding it cannot decode (the check itself)", async () => {
    const shell = new ClientSession(
      { ...OFFICIAL_CLIENTS[1]!, acceptEncoding: "gzip" },
      url,
      COUNT_KEY,
    );
    await assert.rejects(shell.get("/v1/odata/v4/Observations?$top=1000"), UndecodableAnswer);
  });
});

describe("the shell client's download, with no pause and no retry, at the default rate limit", () => {
  it("pages 20 times and partitions over all 200 demo locations, getting every row; past the burst 2/s holds", async () => {
    const shell = new ClientSession(OFFICIAL_CLIENTS[1]!, url, SHELL_KEY);
    const locations = await shell.rows("Locations", { $top: 10 });
    assert.equal(locations.length, 200);
    assert.equal(shell.statuses.length, 20, "20 pages of 10");
    // Whole rows: every page above the compression threshold, and sent as the shell can read it.
    assert.deepEqual(
      shell.pages.filter((page) =>
        page.bytes <= COMPRESS_ABOVE_BYTES || page.coding !== "identity"
      ),
      [],
    );
    const filter = "CharacteristicName eq 'Temperature, water'";
    const rows = await shell.partitioned(
      "Observations",
      10000,
      "Id,LocationId,ResultValue",
      filter,
    );
    assert.equal(
      shell.statuses.length,
      20 + 1 + 200,
      "one /Locations request, then one per location",
    );
    assert.ok(
      shell.statuses.every((status) => status === 200),
      `every answer 200: ${shell.statuses.filter((status) => status !== 200).length} were not`,
    );
    assert.equal(rows.length, await count("Observations", filter));
    assert.equal(new Set(rows.map((row) => row["Id"])).size, rows.length);

    // Past the burst, a client still going flat out is held to the sustained rate.
    const last = await shell.get("/v1/odata/v4/Locations?$top=1");
    const remaining = Number(last.headers["ratelimit-remaining"]);
    assert.equal(last.headers["ratelimit-limit"], "250");
    assert.equal(last.headers["ratelimit-policy"], "250;w=125");
    const started = performance.now();
    const statuses: number[] = [];
    for (let i = 0; i < remaining + 60; i++) {
      statuses.push((await shell.get("/v1/odata/v4/Locations?$top=1")).status);
    }
    const seconds = (performance.now() - started) / 1000;
    const answered = statuses.filter((status) => status === 200).length;
    assert.ok(statuses.includes(429), "refused past the burst");
    assert.ok(
      answered <= remaining + Math.ceil(2 * seconds) + 1,
      `${answered} answered in ${
        seconds.toFixed(1)
      } s with ${remaining} left: at most 2 a second past the burst`,
    );
  });
});

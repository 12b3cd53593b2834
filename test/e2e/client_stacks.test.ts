// The official DataStream clients' own HTTP stacks against the server as
// `npm start` runs it (default rate limit, default compression). The clients'
// sources cannot be fetched here, but what they run on can: the shell
// client's `curl --http2 --tlsv1.2 -sG` (no `--compressed`) piped to `jq`,
// with the headers it sends, following `@odata.nextLink` and partitioning by
// location as it does (reference/datastream.md §2). test/e2e/official_clients.test.ts
// models every client on node:http; this runs the real programs.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";
import { ClientSession, OFFICIAL_CLIENTS } from "../_helpers/datastream_clients.ts";
import { listeningUrl, type Started, startServer } from "../_helpers/server.ts";

const run = promisify(execFile);
const REGION = "RegionId eq 'admin.4.ca.ns'";
/** Above this many bytes the default server compresses an answer (COMPRESS_ABOVE_BYTES). */
const COMPRESS_ABOVE_BYTES = 1024;
const SHELL_KEY = "stack-shell";
const REFERENCE_KEY = "stack-reference";

const dir = mkdtempSync(join(tmpdir(), "tributary-client-stacks-"));
after(() => rmSync(dir, { recursive: true, force: true }));

let server: Started;
let url = "";
let reference: ClientSession;

before(async () => {
  server = startServer({ API_KEYS: [SHELL_KEY, REFERENCE_KEY].join(",") });
  url = await listeningUrl(server);
  // What the same calls answer to a client that takes no compression at all, on a key of its own.
  reference = new ClientSession(
    { ...OFFICIAL_CLIENTS[1]!, acceptEncoding: "identity" },
    url,
    REFERENCE_KEY,
  );
});
after(() => {
  server?.child.kill("SIGTERM");
});

/** The first location's Id, asked by the reference client (one page of one row). */
async function firstLocationId(): Promise<number> {
  const answer = await reference.get("/v1/odata/v4/Locations?$top=1&$select=Id");
  assert.equal(answer.status, 200, answer.text);
  return (JSON.parse(answer.text) as { value: { Id: number }[] }).value[0]!.Id;
}

/** How many rows a query matches, asked by the reference client. */
async function count(collection: string, filter: string): Promise<number> {
  const answer = await reference.get(
    `/v1/odata/v4/${collection}?$count=true&$filter=${encodeURIComponent(filter)}`,
  );
  assert.equal(answer.status, 200, answer.text);
  return Number((JSON.parse(answer.text) as { value: unknown }).value);
}

// The shell client's request path, written for this test after what
// reference/datastream.md §2 says datastreamsh does: the query built with its
// byte-wise urlencode (`%24top`, `%24select`, `%24filter`), one
// `curl --http2 --tlsv1.2 -sG` per page with its three headers and no
// `--compressed`, `jq -c '.errors'` then `jq -c '.value[]'` on the body, and
// `."@odata.nextLink"` followed until it is null. /Observations and /Records
// are partitioned: the filter's locations first (`$select=Id`), then one
// request per location with `LocationId eq <Id> and <filter>`. Variables are
// quoted (the client's unquoted `echo ${res}` only reflows whitespace). For
// the test, each page's size as read and its URL go to standard error.
const SHELL_CLIENT = String.raw`set -euo pipefail
urlencode() {
  local text="$1" i c
  for ((i = 0; i < ${"${#text}"}; i++)); do
    c="${"${text:i:1}"}"
    case "$c" in
      [a-zA-Z0-9.~_-]) printf '%s' "$c" ;;
      *) printf '%%%02X' "'$c" ;;
    esac
  done
}
query() {
  local q
  q="%24top=$(urlencode "$TOP")"
  if [ -n "$2" ]; then q+="&%24select=$(urlencode "$2")"; fi
  if [ -n "$3" ]; then q+="&%24filter=$(urlencode "$3")"; fi
  printf '%s%s?%s' "$ORIGIN" "$1" "$q"
}
request() {
  local res err next
  res=$(curl --http2 --tlsv1.2 -sG "$1" -H "Accept: application/vnd.api+json" \
    -H "Accept-Encoding: $ACCEPT_ENCODING" -H "x-api-key: $API_KEY")
  printf '%s %s\n' "${"${#res}"}" "$1" >&2
  err=$(printf '%s' "$res" | jq -c '.errors')
  if [ "$err" != "null" ]; then
    printf 'errors: %s\n' "$err" >&2
    exit 1
  fi
  printf '%s' "$res" | jq -c '.value[]'
  next=$(printf '%s' "$res" | jq -r '."@odata.nextLink"')
  if [ "$next" != "null" ]; then request "$next"; fi
}
partitioned() {
  local narrow='(^Id| Id|^LocationId| LocationId)' line id filter
  if [[ $3 =~ $narrow ]]; then
    request "$(query "$1" "$2" "$3")"
    return
  fi
  request "$(query /v1/odata/v4/Locations Id "${"${3/LocationId/Id}"}")" | while read -r line; do
    id=$(printf '%s' "$line" | jq '.Id')
    filter="LocationId eq $id"
    if [ -n "$3" ]; then filter+=" and $3"; fi
    request "$(query "$1" "$2" "$filter")"
  done
}
metadata() { request "$(query /v1/odata/v4/Metadata "$1" "$2")"; }
locations() { request "$(query /v1/odata/v4/Locations "$1" "$2")"; }
observations() { partitioned /v1/odata/v4/Observations "$1" "$2"; }
records() { partitioned /v1/odata/v4/Records "$1" "$2"; }
"$1" "$2" "$3"
`;

const shellTools = ["bash", "curl", "jq"].filter((tool) =>
  spawnSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" }).status !== 0
);
// A developer's run without them skips and says so; REQUIRE_SERVICES=1 (as .ci/run sets, which installs them) makes that a failure.
const shellSkip: false | string = shellTools.length === 0 ||
    process.env["REQUIRE_SERVICES"] === "1"
  ? false
  : `${
    shellTools.join(", ")
  } not installed (.ci/run installs them); set REQUIRE_SERVICES=1 to fail instead`;

/** What one shell client command printed: its rows, and each page it read. */
interface ShellRun {
  readonly rows: Record<string, unknown>[];
  readonly pages: readonly { readonly bytes: number; readonly url: string }[];
}

/**
 * Runs one of the shell client's commands (`metadata`, `locations`,
 * `observations`, `records`) with its `--top`, `--select` and `--filter`.
 * @throws {Error} when the script fails (curl's bytes not JSON to jq, an `errors` body)
 */
async function shell(
  command: string,
  top: number,
  select: string,
  filter: string,
  acceptEncoding = "br",
): Promise<ShellRun> {
  const script = join(dir, "datastream.sh");
  writeFileSync(script, SHELL_CLIENT);
  const { stdout, stderr } = await run("bash", [script, command, select, filter], {
    cwd: dir,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
    env: {
      PATH: process.env["PATH"] ?? "",
      LC_ALL: "C",
      ORIGIN: url,
      API_KEY: SHELL_KEY,
      TOP: String(top),
      ACCEPT_ENCODING: acceptEncoding,
    },
  });
  return {
    rows: stdout.split("\n").filter((line) => line !== "").map((line) =>
      JSON.parse(line) as Record<string, unknown>
    ),
    pages: stderr.split("\n").filter((line) => line !== "").map((line) => {
      const at = line.indexOf(" ");
      return { bytes: Number(line.slice(0, at)), url: line.slice(at + 1) };
    }),
  };
}

/** Asserts that every page read is above the compression threshold (so a bare br would have been compressed). */
function assertBigPages(pages: ShellRun["pages"], least: number): void {
  assert.ok(pages.length >= least, `${pages.length} pages`);
  for (const page of pages) {
    assert.ok(page.bytes > COMPRESS_ABOVE_BYTES, `${page.bytes} bytes at ${page.url}`);
  }
}

describe("the shell client's curl and jq (Accept-Encoding: br, no --compressed)", {
  skip: shellSkip,
}, () => {
  before(() => {
    assert.deepEqual(shellTools, [], "REQUIRE_SERVICES=1 but bash, curl or jq is missing");
  });

  it("pages the datasets two at a time through @odata.nextLink, every page read by jq", async () => {
    const read = await shell("metadata", 2, "", "");
    assertBigPages(read.pages, 3);
    assert.ok(read.pages.slice(1).every((page) => page.url.includes("skiptoken")));
    assert.deepEqual(read.rows, await reference.rows("Metadata", { $top: 100 }));
  });

  it("pages a region's locations six at a time, getting every one", async () => {
    const read = await shell("locations", 6, "", REGION);
    assertBigPages(read.pages, 3);
    assert.equal(read.rows.length, await count("Locations", REGION));
    assert.deepEqual(
      read.rows,
      await reference.rows("Locations", { $top: 10000, $filter: REGION }),
    );
  });

  it("pages one location's observations a hundred at a time (not partitioned: the filter names LocationId)", async () => {
    const filter = `LocationId eq ${await firstLocationId()}`;
    const read = await shell("observations", 100, "", filter);
    assertBigPages(read.pages, 3);
    assert.equal(read.rows.length, await count("Observations", filter));
    assert.deepEqual(
      read.rows,
      await reference.rows("Observations", { $top: 10000, $filter: filter }),
    );
  });

  it("partitions observations per location, getting every row", async () => {
    const filter = `CharacteristicName eq 'pH' and ${REGION}`;
    const select = "Id,LocationId,CharacteristicName,ResultValue,ResultUnit";
    const read = await shell("observations", 10000, select, filter);
    const locations = await reference.rows("Locations", {
      $top: 10000,
      $select: "Id",
      $filter: filter,
    });
    assert.ok(locations.length > 3, `${locations.length} locations`);
    assert.equal(
      read.pages.length,
      1 + locations.length,
      "one /Locations request, then one per location",
    );
    assert.equal(read.rows.length, await count("Observations", filter));
    assert.deepEqual(read.rows, await reference.partitioned("Observations", 10000, select, filter));
  });

  it("partitions records per location and pages within each, getting every row", async () => {
    const filter = `CharacteristicName eq 'Nitrate' and ${REGION}`;
    const read = await shell("records", 10, "", filter);
    const locations = await reference.rows("Locations", {
      $top: 10000,
      $select: "Id",
      $filter: filter,
    });
    assert.ok(
      read.pages.length > 1 + locations.length,
      "some location's records take more than one page",
    );
    assertBigPages(read.pages.filter((page) => page.url.includes("skiptoken")), 3);
    assert.equal(read.rows.length, await count("Records", filter));
    assert.deepEqual(read.rows, await reference.partitioned("Records", 10000, undefined, filter));
  });

  it("fails as the client fails when an answer comes compressed (the check itself)", async () => {
    await assert.rejects(shell("metadata", 100, "", "", "gzip"), /errors: \n|parse error/);
  });
});

// The official DataStream clients' own HTTP stacks against the server as
// `npm start` runs it (default rate limit, default compression). The clients'
// sources cannot be fetched here, but what they run on can: the shell
// client's `curl --http2 --tlsv1.2 -sG` (no `--compressed`) piped to `jq`,
// and the Python client's `requests` without a brotli module, each with the
// headers its client sends, following `@odata.nextLink` and partitioning by
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
const PYTHON_KEY = "stack-python";
const REFERENCE_KEY = "stack-reference";

const dir = mkdtempSync(join(tmpdir(), "tributary-client-stacks-"));
after(() => rmSync(dir, { recursive: true, force: true }));

let server: Started;
let url = "";
let reference: ClientSession;

before(async () => {
  server = startServer({ API_KEYS: [SHELL_KEY, PYTHON_KEY, REFERENCE_KEY].join(",") });
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

// The Python client's request path on the real `requests`, written for this
// test after what reference/datastream.md §2 says datastream-py does, in the
// install its instructions give: `requests` with no brotli module (hidden
// here even where one is installed, before requests is imported, so that
// urllib3 finds none). It sends Accept, `Accept-Encoding: br` and x-api-key,
// `$top` 10,000 unless given, reads `response.json()` (a JSONDecodeError on
// a body it cannot decode), follows `@odata.nextLink` as it is, and
// partitions /Observations and /Records per location. It does not pause
// (the client waits 0.5 s between requests): the burst has to take that.
// Argument: one call as JSON; output: what requests advertises, whether
// urllib3 can decode br, each page read, and the call's result.
const PYTHON_CLIENT = String.raw`import json, re, sys
sys.modules["brotli"] = None
sys.modules["brotlicffi"] = None
import requests
import urllib3.response

call = json.loads(sys.argv[1])
origin = sys.argv[2]
headers = {
    "Accept": "application/vnd.api+json",
    "Accept-Encoding": call.get("acceptEncoding", "br"),
    "x-api-key": sys.argv[3],
}
pages = []

def get(url, params=None):
    res = requests.request("GET", url, params=params, headers=headers, timeout=60)
    res.raise_for_status()
    pages.append({
        "url": res.url,
        "coding": res.headers.get("Content-Encoding", "identity"),
        "bytes": len(res.content),
    })
    return res

def fetch(path, params):
    body = get(origin + path, {"$top": 10000} | params).json()
    while True:
        value = body.get("value")
        if isinstance(value, list):
            yield from value
        else:
            yield value
        link = body.get("@odata.nextLink")
        if link is None:
            return
        body = get(link).json()

def partitioned(path, params):
    narrow = params.get("$filter", "")
    if re.search("^Id| Id|^LocationId| LocationId", narrow):
        yield from fetch(path, params)
        return
    for location in fetch("/v1/odata/v4/Locations", {"$select": "Id", "$filter": narrow}):
        own = f"LocationId eq {location['Id']}" + (f" and {narrow}" if narrow else "")
        yield from fetch(path, params | {"$filter": own})

path, params = "/v1/odata/v4/" + call["collection"], call["params"]
if call["kind"] == "count":
    result = next(fetch(path, params))
elif call["kind"] == "csv":
    result = get(origin + path, params).text
elif call["kind"] == "partitioned":
    result = list(partitioned(path, params))
else:
    result = list(fetch(path, params))
json.dump({
    "advertised": requests.utils.default_headers()["Accept-Encoding"],
    "decodesBr": getattr(urllib3.response, "brotli", None) is not None,
    "pages": pages,
    "result": result,
}, sys.stdout)
`;

// PATH's python3 first, then Debian's (where python3-requests installs), whichever has requests.
const pythonBin = ["python3", "/usr/bin/python3"].find((candidate) =>
  spawnSync(candidate, ["-c", "import requests"], { stdio: "ignore" }).status === 0
);
const pythonFound = pythonBin !== undefined;
// As for the shell's tools: a developer's run without them skips, REQUIRE_SERVICES=1 fails.
const pythonSkip: false | string = pythonFound || process.env["REQUIRE_SERVICES"] === "1"
  ? false
  : "python3 with requests is not installed (Debian package python3-requests; .ci/run installs it); set REQUIRE_SERVICES=1 to fail instead";

/** How many records a CSV text holds, header included: line ends outside quoted fields. */
function csvRecords(text: string): number {
  let records = 0;
  let quoted = false;
  for (const c of text) {
    if (c === '"') quoted = !quoted;
    else if (c === "\n" && !quoted) records++;
  }
  return text.endsWith("\n") ? records : records + 1;
}

/** What the Python client's stack printed for one call. */
interface PythonRun {
  readonly advertised: string;
  readonly decodesBr: boolean;
  readonly pages: readonly {
    readonly url: string;
    readonly coding: string;
    readonly bytes: number;
  }[];
  readonly result: unknown;
}

/**
 * One call of the Python client on the real `requests`.
 * @param call `rows` (paged), `partitioned`, `count` or `csv`, of a collection with its params
 * @throws {Error} when Python fails (a JSONDecodeError, an HTTP error status)
 */
async function python(call: {
  readonly kind: "rows" | "partitioned" | "count" | "csv";
  readonly collection: string;
  readonly params: Readonly<Record<string, string | number>>;
  readonly acceptEncoding?: string;
}): Promise<PythonRun> {
  const { stdout } = await run(
    pythonBin ?? "python3",
    ["-c", PYTHON_CLIENT, JSON.stringify(call), url, PYTHON_KEY],
    {
      cwd: dir,
      encoding: "utf8",
      maxBuffer: 256 * 1024 * 1024,
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "" },
    },
  );
  const read = JSON.parse(stdout) as PythonRun;
  // The install the client documents: requests neither advertises nor decodes br.
  assert.ok(!/\bbr\b/.test(read.advertised), `requests advertises ${read.advertised}`);
  assert.equal(read.decodesBr, false, "urllib3 found a brotli module");
  return read;
}

describe("the Python client's requests, without brotli (Accept-Encoding: br)", {
  skip: pythonSkip,
}, () => {
  before(() => {
    assert.ok(pythonFound, "REQUIRE_SERVICES=1 but python3 with requests is not installed");
  });

  /** Asserts several pages above the compression threshold, each sent uncompressed. */
  function assertBigPlainPages(pages: PythonRun["pages"]): void {
    assert.ok(pages.length >= 3, `${pages.length} pages`);
    for (const page of pages) {
      assert.ok(page.bytes > COMPRESS_ABOVE_BYTES, `${page.bytes} bytes at ${page.url}`);
      assert.equal(page.coding, "identity", page.url);
    }
  }

  it("pages the datasets, a region's locations and one location's observations through @odata.nextLink", async () => {
    const own = `LocationId eq ${await firstLocationId()}`;
    const cases = [
      { collection: "Metadata", params: { $top: 2 }, all: { $top: 100 } },
      { collection: "Locations", params: { $top: 6, $filter: REGION }, all: { $filter: REGION } },
      {
        collection: "Observations",
        params: { $top: 100, $filter: own },
        all: { $filter: own },
      },
    ] as const;
    for (const c of cases) {
      const read = await python({ kind: "rows", collection: c.collection, params: c.params });
      assertBigPlainPages(read.pages);
      assert.deepEqual(read.result, await reference.rows(c.collection, { $top: 10000, ...c.all }));
    }
  });

  it("partitions observations and records per location (paging within one), getting every row", async () => {
    const ph = `CharacteristicName eq 'pH' and ${REGION}`;
    const select = "Id,LocationId,CharacteristicName,ResultValue,ResultUnit";
    const observations = await python({
      kind: "partitioned",
      collection: "Observations",
      params: { $select: select, $filter: ph },
    });
    assert.equal((observations.result as unknown[]).length, await count("Observations", ph));
    assert.deepEqual(
      observations.result,
      await reference.partitioned("Observations", 10000, select, ph),
    );
    const nitrate = `CharacteristicName eq 'Nitrate' and ${REGION}`;
    const records = await python({
      kind: "partitioned",
      collection: "Records",
      params: { $top: 10, $filter: nitrate },
    });
    assertBigPlainPages(records.pages.filter((page) => page.url.includes("skiptoken")));
    assert.equal((records.result as unknown[]).length, await count("Records", nitrate));
    assert.deepEqual(
      records.result,
      await reference.partitioned("Records", 10000, undefined, nitrate),
    );
  });

  it("reads $count as the client does, from value", async () => {
    const read = await python({
      kind: "count",
      collection: "Observations",
      params: { $count: "true", $filter: REGION },
    });
    assert.equal(Number(read.result), await count("Observations", REGION));
  });

  it("reads a region's pH records as CSV, uncompressed, every row", async () => {
    const filter = `CharacteristicName eq 'pH' and ${REGION}`;
    const read = await python({
      kind: "csv",
      collection: "Records",
      params: { $format: "csv", $top: 10000, $filter: filter },
    });
    assert.equal(read.pages.length, 1);
    assert.ok(read.pages[0]!.bytes > COMPRESS_ABOVE_BYTES, `${read.pages[0]!.bytes} bytes`);
    assert.equal(read.pages[0]!.coding, "identity");
    const csv = read.result as string;
    assert.match(csv, /^Id,DOI,DatasetName,MonitoringLocationID,/);
    assert.equal(csvRecords(csv), 1 + await count("Records", filter));
    const plain = await reference.get(
      `/v1/odata/v4/Records?$format=csv&$top=10000&$filter=${encodeURIComponent(filter)}`,
    );
    assert.equal(csv, plain.text);
  });

  it("fails as the client fails when an answer comes in br (the check itself)", async () => {
    await assert.rejects(
      python({
        kind: "rows",
        collection: "Metadata",
        params: { $top: 100 },
        acceptEncoding: "br, gzip, deflate",
      }),
      /JSONDecodeError/,
    );
  });
});

// HTTPS with HTTP/2 on the app's port, as the official shell client calls it:
// `curl --http2 --tlsv1.2 -sG` with `--data-urlencode`, following
// `@odata.nextLink`, against a certificate the test makes (openssl) and
// trusts (--cacert). HTTP/1.1 works on the same port; a broken TLS file stops
// start-up naming its variable.
import assert from "node:assert/strict";
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { promisify } from "node:util";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { brotliDecompressSync } from "node:zlib";
import { type App, createApp, readConfig } from "../../lib/app/mod.ts";
import { readTlsFiles } from "../../lib/app/node_server.ts";

const dir = mkdtempSync(join(tmpdir(), "tributary-tls-"));
const CERT = join(dir, "cert.pem");
const KEY = join(dir, "key.pem");
const KEY_HEADER = "x-api-key: tributary-demo-key";
const tools = spawnSync("sh", ["-c", "command -v openssl && command -v curl"]).status === 0;
// A developer's run without them skips and says so; REQUIRE_SERVICES=1 (as .ci/run sets, which installs them) makes that a failure.
const skip: false | string = tools || process.env["REQUIRE_SERVICES"] === "1"
  ? false
  : "openssl and curl are needed";

let app: App;
let url: string;

before(() => {
  if (skip !== false) return;
  assert.ok(tools, "REQUIRE_SERVICES=1 but openssl or curl is not installed");
  execFileSync("openssl", [
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=127.0.0.1",
    "-addext",
    "subjectAltName=IP:127.0.0.1",
    "-keyout",
    KEY,
    "-out",
    CERT,
  ], { stdio: "ignore" });
});

after(() => app?.close());

const run = promisify(execFile);

/** curl as the shell client runs it (in its own process: the server answers on this one's event loop), plus the HTTP version it used. */
async function curl(args: readonly string[]): Promise<{ body: string; version: string }> {
  const { stdout: out } = await run("curl", [
    ...args,
    "--cacert",
    CERT,
    "-H",
    KEY_HEADER,
    "-w",
    "\n%{http_version}",
  ], { encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  const at = out.lastIndexOf("\n");
  return { body: out.slice(0, at), version: out.slice(at + 1) };
}

/** Every row of a query, page by page through `@odata.nextLink`, with the given protocol flags. */
async function allRows(
  protocol: readonly string[],
  path: string,
  params: readonly string[],
): Promise<{ rows: unknown[]; versions: Set<string> }> {
  const rows: unknown[] = [];
  const versions = new Set<string>();
  let answer = await curl([
    ...protocol,
    "-sG",
    `${url}${path}`,
    ...params.flatMap((param) => ["--data-urlencode", param]),
  ]);
  for (let pages = 0; pages < 1000; pages++) {
    versions.add(answer.version);
    const page = JSON.parse(answer.body) as { value: unknown[]; "@odata.nextLink"?: string };
    assert.ok(Array.isArray(page.value), answer.body.slice(0, 300));
    rows.push(...page.value);
    const next = page["@odata.nextLink"];
    if (next === undefined) return { rows, versions };
    answer = await curl([...protocol, "-s", next]);
  }
  assert.fail("more than 1000 pages");
}

describe("HTTPS and HTTP/2 (TLS_CERT_FILE, TLS_KEY_FILE)", { skip }, () => {
  before(async () => {
    app = createApp(
      readConfig({
        SERVICES: "water",
        STATE_DIR: "",
        TLS_CERT_FILE: CERT,
        TLS_KEY_FILE: KEY,
        RATE_LIMIT_PER_SECOND: "0",
        RATE_LIMIT_CONCURRENCY: "0",
      }),
      { log: { info: () => {}, error: () => {} } },
    );
    await app.start();
    url = (await app.listen({ port: 0, host: "127.0.0.1" })).url;
  });

  it("listens on https://", () => assert.match(url, /^https:\/\/127\.0\.0\.1:\d+$/));

  it("pages the shell client's request over HTTP/2 to exactly the rows of the direct query over HTTP/1.1", async () => {
    const params = [
      "$filter=CharacteristicName eq 'pH'",
      "$top=700",
      "$select=Id,LocationId,ActivityStartDate,ResultValue",
    ];
    const h2 = await allRows(["--http2", "--tlsv1.2"], "/v1/odata/v4/Observations", params);
    assert.deepEqual([...h2.versions], ["2"]);
    assert.ok(h2.rows.length > 700, `${h2.rows.length} rows: more than one page`);
    const direct = await allRows(["--http1.1"], "/v1/odata/v4/Observations", [
      "$filter=CharacteristicName eq 'pH'",
      "$top=10000",
      "$select=Id,LocationId,ActivityStartDate,ResultValue",
    ]);
    assert.deepEqual([...direct.versions], ["1.1"]);
    assert.deepEqual(h2.rows, direct.rows);
  });

  it("streams a whole CSV over HTTP/2 compressed, equal to HTTP/1.1's", async () => {
    const h2 = await curl([
      "--http2",
      "--compressed",
      "-sG",
      `${url}/v1/odata/v4/Observations`,
      "--data-urlencode",
      "$format=csv",
    ]);
    const h1 = await curl([
      "--http1.1",
      "-sG",
      `${url}/v1/odata/v4/Observations`,
      "--data-urlencode",
      "$format=csv",
    ]);
    assert.equal(h2.version, "2");
    assert.ok(h2.body.split("\n").length > 1000);
    assert.equal(h2.body, h1.body);
  });

  it("sends a big page (5,000 rows, compressed as it renders) gzip and br over HTTP/2 and HTTP/1.1, each equal once decoded (gzip by the gzip program) to the page sent plain", async () => {
    const target = `${url}/v1/odata/v4/Observations?$top=5000&$skiptoken=Id:1000`;
    const raw = async (protocol: string, coding: string) => {
      const { stdout } = await run("curl", [
        protocol,
        "-s",
        "--cacert",
        CERT,
        "-H",
        KEY_HEADER,
        "-H",
        `Accept-Encoding: ${coding === "br" ? "gzip, deflate, br" : coding}`,
        "-D",
        "-",
        target,
      ], { encoding: "buffer", maxBuffer: 64 * 1024 * 1024 });
      const end = stdout.indexOf("\r\n\r\n");
      return {
        head: stdout.subarray(0, end).toString().toLowerCase(),
        body: stdout.subarray(end + 4),
      };
    };
    const plain = await raw("--http1.1", "identity");
    assert.ok(plain.body.length > 1_000_000, `${plain.body.length} bytes`);
    assert.deepEqual(
      (JSON.parse(plain.body.toString()) as { value: unknown[] }).value.length,
      5000,
    );
    for (const protocol of ["--http2", "--http1.1"]) {
      const gzip = await raw(protocol, "gzip");
      assert.match(gzip.head, /content-encoding: gzip/);
      assert.ok(gzip.body.length < plain.body.length / 10);
      const decoded = spawnSync("gzip", ["-dc"], { input: gzip.body, maxBuffer: 64 * 1024 * 1024 });
      assert.equal(decoded.status, 0, decoded.stderr.toString());
      assert.ok(decoded.stdout.equals(plain.body), `${protocol} gzip`);
      const br = await raw(protocol, "br");
      assert.match(br.head, /content-encoding: br/);
      assert.ok(brotliDecompressSync(br.body).equals(plain.body), `${protocol} br`);
    }
  });
});

describe("readTlsFiles()", { skip }, () => {
  it("reads neither as cleartext, and both as a checked pair", () => {
    assert.equal(readTlsFiles("", ""), undefined);
    const files = readTlsFiles(CERT, KEY)!;
    assert.ok(files.cert.length > 0 && files.key.length > 0);
  });

  it("stops start-up naming the variable: one alone, a missing file, a file that is not PEM, a key of another certificate", () => {
    const junk = join(dir, "junk.pem");
    writeFileSync(junk, "not a certificate");
    const otherKey = join(dir, "other.pem");
    execFileSync("openssl", [
      "genpkey",
      "-algorithm",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:P-256",
      "-out",
      otherKey,
    ], { stdio: "ignore" });
    const cases = [
      { cert: CERT, key: "", variable: "TLS_KEY_FILE" },
      { cert: "", key: KEY, variable: "TLS_CERT_FILE" },
      { cert: join(dir, "missing.pem"), key: KEY, variable: "TLS_CERT_FILE" },
      { cert: junk, key: KEY, variable: "TLS_CERT_FILE" },
      { cert: CERT, key: junk, variable: "TLS_KEY_FILE" },
      { cert: CERT, key: otherKey, variable: "TLS_KEY_FILE" },
    ];
    for (const c of cases) {
      assert.throws(() => readTlsFiles(c.cert, c.key), {
        name: "ConfigError",
        variable: c.variable,
      }, JSON.stringify(c));
    }
  });
});

// What Node's HTTP/1.1 parser refuses on its own, as clients send it: the bad
// bytes over a raw TCP socket (and over TLS), and a 120 KB URL from curl. Each
// answer carries the JSON error body, Content-Type and Content-Length, and
// the connection is closed after it.
import assert from "node:assert/strict";
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { connect as tlsConnect } from "node:tls";
import { promisify } from "node:util";
import { createNodeServer, type NodeServer, readTlsFiles } from "../../lib/app/node_server.ts";
import { createClientErrorListener, createNodeListener, type Handler } from "../../lib/http/mod.ts";

const ok: Handler = () => ({ status: 200, headers: { "content-type": "text/plain" }, body: "ok" });

/** An answer read off the wire, and whether the server closed the connection after it. */
interface WireAnswer {
  readonly status: number;
  readonly headers: ReadonlyMap<string, string>;
  readonly body: string;
  readonly closed: boolean;
}

/** Writes `bytes` and reads until the server closes: the status line, headers and body as sent. */
async function exchange(socket: Socket, bytes: string | readonly string[]): Promise<WireAnswer> {
  let got = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => (got += chunk));
  // The server may close before the client wrote everything: that is the point of some cases.
  socket.on("error", () => {});
  for (const part of typeof bytes === "string" ? [bytes] : bytes) socket.write(part);
  const [, closed] = await Promise.race([
    once(socket, "end").then(() => [null, true] as const),
    once(socket, "close").then(() => [null, true] as const),
  ]);
  const split = got.indexOf("\r\n\r\n");
  assert.notEqual(split, -1, JSON.stringify(got.slice(0, 200)));
  const [statusLine, ...lines] = got.slice(0, split).split("\r\n");
  const headers = new Map(
    lines.map((
      line,
    ) => [
      line.slice(0, line.indexOf(":")).toLowerCase(),
      line.slice(line.indexOf(":") + 1).trim(),
    ]),
  );
  return {
    status: Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine!)?.[1]),
    headers,
    body: got.slice(split + 4),
    closed,
  };
}

/** Asserts an answer is the JSON error of `status` and `code`, whole, on a closed connection. */
function assertJsonError(answer: WireAnswer, status: number, code: string): { message: string } {
  assert.equal(answer.status, status);
  assert.equal(answer.headers.get("content-type"), "application/json; charset=utf-8");
  assert.equal(Number(answer.headers.get("content-length")), Buffer.byteLength(answer.body));
  assert.equal(answer.headers.get("connection"), "close");
  assert.ok(answer.closed, "the server closes the connection");
  const body = JSON.parse(answer.body) as {
    error: { code: string; message: string };
    errors: { code: string; message: string }[];
  };
  assert.equal(body.error.code, code);
  assert.deepEqual(body.errors, [body.error]);
  assert.match(body.error.message, /^Cannot /);
  return body.error;
}

/** A 120 KB URL, as a long `$filter` makes one (under the 128 KB a single argument to curl may have). */
const LONG_URL = `/v1/odata/v4/Observations?$filter=${
  "Id%20eq%201%20or%20".repeat(6300)
}Id%20eq%202`;
const cases = [
  {
    name: "a 120 KB request line",
    bytes: [`GET ${LONG_URL} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`],
    status: 431,
    code: "ERR_HTTP_HEADERS_TOO_LARGE",
    says: /larger than 16384 bytes/,
  },
  {
    name: "headers above the limit",
    bytes: [`GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"x".repeat(20_000)}\r\n\r\n`],
    status: 431,
    code: "ERR_HTTP_HEADERS_TOO_LARGE",
    says: /send a shorter URL or fewer headers/,
  },
  {
    name: "a request line with an unknown method",
    bytes: ["BR3W / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
    status: 400,
    code: "ERR_HTTP_BAD_REQUEST",
    says: /^Cannot parse the request: invalid method/,
  },
  {
    name: "a request line that is not HTTP",
    bytes: ["GET / HTTQ/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
    status: 400,
    code: "ERR_HTTP_BAD_REQUEST",
    says: /^Cannot parse the request: /,
  },
  {
    name: "a malformed header, after one holding a secret",
    bytes: [
      "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer wire-secret-5d2c\r\nNo colon here\r\n\r\n",
    ],
    status: 400,
    code: "ERR_HTTP_BAD_REQUEST",
    says: /^Cannot parse the request: invalid header token/,
  },
  {
    name: "two Content-Length headers that differ",
    bytes: [
      "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nab",
    ],
    status: 400,
    code: "ERR_HTTP_BAD_REQUEST",
    says: /^Cannot parse the request: /,
  },
  {
    name: "chunk extensions above Node's limit",
    bytes: [
      `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n5;${
        "e".repeat(20_000)
      }\r\nhello\r\n0\r\n\r\n`,
    ],
    status: 413,
    code: "ERR_HTTP_BODY_TOO_LARGE",
    says: /chunk extensions are too large/,
  },
] as const;

describe(
  "createClientErrorListener() on createNodeServer's HTTP/1.1 server",
  { timeout: 30_000 },
  () => {
    let server: NodeServer;
    let port: number;
    before(async () => {
      server = createNodeServer(createNodeListener(ok), undefined);
      port = await server.listen(0, "127.0.0.1");
    });
    after(() => {
      server.closeAll();
      return server.close();
    });

    for (const c of cases) {
      it(`answers ${c.name} with ${c.status} and the JSON error body, then closes`, async () => {
        const error = assertJsonError(
          await exchange(connect(port, "127.0.0.1"), c.bytes),
          c.status,
          c.code,
        );
        assert.match(error.message, c.says);
        assert.equal(
          error.message.includes("wire-secret-5d2c"),
          false,
          "the refused bytes are not echoed",
        );
      });
    }

    it("still answers a good request on the same server", async () => {
      const answer = await exchange(
        connect(port, "127.0.0.1"),
        "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
      );
      assert.equal(answer.status, 200);
      assert.equal(answer.body, "ok");
    });
  },
);

describe("createClientErrorListener() with Node's timeouts", { timeout: 30_000 }, () => {
  it("answers a request whose headers do not arrive in time with 408 and the JSON error body, and tells onAnswer", async () => {
    const statuses: number[] = [];
    // Short limits, so that the server's own timer (not the test) decides quickly.
    const server = createServer({
      headersTimeout: 200,
      requestTimeout: 200,
      connectionsCheckingInterval: 20,
    }, createNodeListener(ok));
    server.on(
      "clientError",
      createClientErrorListener({ onAnswer: (status) => statuses.push(status) }),
    );
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
      const error = assertJsonError(
        await exchange(socket, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"),
        408,
        "ERR_HTTP_REQUEST_TIMEOUT",
      );
      assert.match(error.message, /did not arrive whole in time/);
      assert.deepEqual(statuses, [408]);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("only closes a connection the client already reset", async () => {
    const closed: string[] = [];
    const listener = createClientErrorListener({ onAnswer: () => closed.push("answered") });
    const socket = { writable: false, destroy: () => closed.push("destroyed") };
    listener(Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }), socket as never);
    assert.deepEqual(closed, ["destroyed"]);
  });
});

const tools = spawnSync("sh", ["-c", "command -v openssl && command -v curl"]).status === 0;
// As test/e2e/https.test.ts: a developer's run without them skips and says so; REQUIRE_SERVICES=1 makes that a failure.
const toolsSkip: false | string = tools || process.env["REQUIRE_SERVICES"] === "1"
  ? false
  : "openssl and curl are needed";

describe(
  "createClientErrorListener() for curl and over TLS",
  { skip: toolsSkip, timeout: 60_000 },
  () => {
    const dir = mkdtempSync(join(tmpdir(), "tributary-client-error-"));
    const cert = join(dir, "cert.pem");
    const key = join(dir, "key.pem");
    let plain: NodeServer;
    let secure: NodeServer;
    let plainPort: number;
    let securePort: number;
    before(async () => {
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
        key,
        "-out",
        cert,
      ], { stdio: "ignore" });
      plain = createNodeServer(createNodeListener(ok), undefined);
      plainPort = await plain.listen(0, "127.0.0.1");
      secure = createNodeServer(createNodeListener(ok), readTlsFiles(cert, key));
      securePort = await secure.listen(0, "127.0.0.1");
    });
    after(async () => {
      for (const server of [plain, secure]) {
        server.closeAll();
        await server.close();
      }
    });

    /** curl in its own process (the server answers on this one's event loop): the status, content type and body. */
    async function curl(
      args: readonly string[],
    ): Promise<{ status: number; type: string; body: string }> {
      const { stdout } = await promisify(execFile)("curl", [
        "-s",
        "-w",
        "\n%{http_code} %{content_type}",
        ...args,
      ], { encoding: "utf8", maxBuffer: 1 << 20 });
      const at = stdout.lastIndexOf("\n");
      const [status, ...type] = stdout.slice(at + 1).split(" ");
      return { status: Number(status), type: type.join(" "), body: stdout.slice(0, at) };
    }

    it("answers curl's 120 KB URL with 431 and the JSON error body", async () => {
      const answer = await curl([`http://127.0.0.1:${plainPort}${LONG_URL}`]);
      assert.equal(answer.status, 431);
      assert.equal(answer.type, "application/json; charset=utf-8");
      assert.equal(
        (JSON.parse(answer.body) as { error: { code: string } }).error.code,
        "ERR_HTTP_HEADERS_TOO_LARGE",
      );
    });

    it("answers curl's 120 KB URL over HTTPS with HTTP/1.1 likewise", async () => {
      const answer = await curl([
        "--http1.1",
        "--cacert",
        cert,
        `https://127.0.0.1:${securePort}${LONG_URL}`,
      ]);
      assert.equal(answer.status, 431);
      assert.equal(answer.type, "application/json; charset=utf-8");
      assert.equal(
        (JSON.parse(answer.body) as { error: { code: string } }).error.code,
        "ERR_HTTP_HEADERS_TOO_LARGE",
      );
    });

    for (const c of cases.filter((c) => c.status === 400)) {
      it(`answers ${c.name} over TLS with 400 and the JSON error body, then closes`, async () => {
        const socket = tlsConnect({
          host: "127.0.0.1",
          port: securePort,
          ca: [readTlsFiles(cert, key)!.cert],
          ALPNProtocols: ["http/1.1"],
        });
        await once(socket, "secureConnect");
        assertJsonError(await exchange(socket, c.bytes), c.status, c.code);
      });
    }
  },
);

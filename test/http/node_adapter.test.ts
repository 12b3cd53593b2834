import assert from "node:assert/strict";
import { once } from "node:events";
import { type IncomingMessage, request as httpRequest } from "node:http";
import { connect } from "node:net";
import { describe, it } from "node:test";
import {
  type BodyChunks,
  createNodeListener,
  type Handler,
  HttpError,
  type HttpRequest,
  type NodeListenerOptions,
  readJson,
  type ResponseEntry,
} from "../../lib/http/mod.ts";
import { JSON_CONTENT_TYPE } from "../../lib/http/json_response.ts";
import { parseTrustedProxies } from "../../lib/http/trusted_proxies.ts";
import { rawRequest, requestFrom, startServer, type TestServer } from "../_helpers/http.ts";

/** Bound for the suite, which talks to servers; no test sleeps, this only stops a hang. */
const NETWORK = { timeout: 30_000 } as const;

interface Closable {
  after(fn: () => Promise<void>): void;
}

async function serve(
  t: Closable,
  handler: Handler,
  options: NodeListenerOptions = {},
): Promise<TestServer> {
  const server = await startServer(handler, options);
  t.after(() => server.close());
  return server;
}

/** Serves a handler that records the request record it gets. */
async function serveRecording(
  t: Closable,
  options: NodeListenerOptions = {},
): Promise<{ server: TestServer; seen: () => HttpRequest }> {
  let seen: HttpRequest | undefined;
  const server = await serve(t, (request) => {
    seen = request;
    return { status: 204 };
  }, options);
  return {
    server,
    seen: () => {
      assert.ok(seen !== undefined, "the handler was not called");
      return seen;
    },
  };
}

function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve: (value: T) => void = () => {};
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Fetches a URL and reads its body: "complete", or "cut off" when either step fails. */
function fetchOutcome(url: string): Promise<string> {
  return fetch(url).then((r) => r.text()).then(() => "complete", () => "cut off");
}

function errorCode(text: string): unknown {
  return (JSON.parse(text) as { error: { code: unknown } }).error.code;
}

describe("createNodeListener()", NETWORK, () => {
  it("builds the request record: method, raw path, raw query and lower-case headers", async (t) => {
    const { server, seen } = await serveRecording(t);
    await fetch(`${server.url}/a/%24b?x=1&y=%20`, { headers: { "X-Custom": "Value" } });
    const request = seen();
    assert.equal(request.method, "GET");
    assert.equal(request.path, "/a/%24b");
    assert.equal(request.query, "x=1&y=%20");
    assert.equal(request.headers["x-custom"], "Value");
    assert.equal(request.headers["X-Custom"], undefined);
  });

  it("gives an empty query when the target has none", async (t) => {
    const { server, seen } = await serveRecording(t);
    await fetch(`${server.url}/plain`);
    assert.equal(seen().query, "");
  });

  it("reports the peer's address and the origin from Host", async (t) => {
    const { server, seen } = await serveRecording(t);
    await fetch(`${server.url}/`);
    assert.equal(seen().remoteAddress, "127.0.0.1");
    assert.equal(seen().origin, server.url);
  });

  it("takes the origin from a Host header naming another host", async (t) => {
    const { server, seen } = await serveRecording(t);
    await rawRequest(server.port, { headers: { host: "api.example.org:8443" } });
    assert.equal(seen().origin, "http://api.example.org:8443");
  });

  it("falls back to the local address when Host is not a plain host name", async (t) => {
    const { server, seen } = await serveRecording(t);
    await rawRequest(server.port, { headers: { host: "bad_host/x" } });
    assert.equal(seen().origin, server.url);
  });

  it("reports publicOrigin instead of the origin from Host", async (t) => {
    const { server, seen } = await serveRecording(t, { publicOrigin: "https://api.example.org" });
    await fetch(`${server.url}/`);
    assert.equal(seen().origin, "https://api.example.org");
  });

  it("joins repeated headers with ', '", async (t) => {
    const { server, seen } = await serveRecording(t);
    await rawRequest(server.port, {
      headers: { "x-dup": ["1", "2"], "set-cookie": ["a=1", "b=2"] },
    });
    assert.equal(seen().headers["x-dup"], "1, 2");
    assert.equal(seen().headers["set-cookie"], "a=1, b=2");
  });

  it("gives a signal that is not aborted for a request in progress", async (t) => {
    const { server, seen } = await serveRecording(t);
    await fetch(`${server.url}/`);
    assert.equal(seen().signal.aborted, false);
  });

  it("splits an absolute-form request target into path and query", async (t) => {
    const { server, seen } = await serveRecording(t);
    await rawRequest(server.port, { path: "http://example.org/a/%24b?x=1" });
    assert.equal(seen().path, "/a/%24b");
    assert.equal(seen().query, "x=1");
  });

  it("drops a fragment from the request target", async (t) => {
    const { server, seen } = await serveRecording(t);
    await rawRequest(server.port, { path: "/a?x=1#frag" });
    assert.equal(seen().path, "/a");
    assert.equal(seen().query, "x=1");
  });

  it("answers a request target that is not a URL with 400 ERR_HTTP_MALFORMED_URL", async (t) => {
    let called = false;
    const server = await serve(t, () => {
      called = true;
      return { status: 204 };
    });
    const response = await rawRequest(server.port, { method: "OPTIONS", path: "*" });
    assert.equal(response.status, 400);
    assert.equal(errorCode(response.body.toString()), "ERR_HTTP_MALFORMED_URL");
    assert.equal(called, false);
  });

  it("lets the handler read the request body", async (t) => {
    const server = await serve(t, async (request) => ({
      status: 200,
      body: JSON.stringify(await readJson(request)),
    }));
    const response = await fetch(`${server.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"a":[1,2]}',
    });
    assert.deepEqual(await response.json(), { a: [1, 2] });
  });

  it("answers a declared body above the reader's limit with 413", async (t) => {
    const server = await serve(t, async (request) => {
      await request.body.bytes(10);
      return { status: 204 };
    });
    const response = await fetch(`${server.url}/`, { method: "POST", body: "x".repeat(100) });
    assert.equal(response.status, 413);
    assert.equal(errorCode(await response.text()), "ERR_HTTP_BODY_TOO_LARGE");
  });

  it("answers a chunked body that grows past the reader's limit with 413", async (t) => {
    const server = await serve(t, async (request) => {
      await request.body.bytes(10);
      return { status: 204 };
    });
    const response = await rawRequest(server.port, {
      method: "POST",
      headers: { "transfer-encoding": "chunked" },
      body: Array.from({ length: 16 }, () => new Uint8Array(65_536)),
    });
    assert.equal(response.status, 413);
    assert.equal(errorCode(response.body.toString()), "ERR_HTTP_BODY_TOO_LARGE");
  });

  it("reads a body that arrives after the headers, in pieces", async (t) => {
    const called = deferred<void>();
    const server = await serve(t, async (request) => {
      called.resolve();
      const bytes = await request.body.bytes(1000);
      return { status: 200, body: new TextDecoder().decode(bytes) };
    });
    const req = httpRequest(`${server.url}/`, {
      method: "POST",
      headers: { "transfer-encoding": "chunked" },
    });
    req.flushHeaders();
    await called.promise;
    req.write("first,");
    req.end("second");
    const [response] = (await once(req, "response")) as [IncomingMessage];
    let text = "";
    for await (const chunk of response) text += String(chunk);
    assert.equal(response.statusCode, 200);
    assert.equal(text, "first,second");
  });

  it("reads a body larger than the stream's buffer whole", async (t) => {
    const server = await serve(
      t,
      async (request) => ({
        status: 200,
        body: String((await request.body.bytes(4_000_000)).length),
      }),
    );
    const response = await fetch(`${server.url}/`, { method: "POST", body: "y".repeat(3_000_000) });
    assert.equal(await response.text(), "3000000");
  });

  it("answers a small undeclared body above the reader's limit with 413", async (t) => {
    const server = await serve(t, async (request) => {
      await request.body.bytes(10);
      return { status: 204 };
    });
    const response = await rawRequest(server.port, {
      method: "POST",
      headers: { "transfer-encoding": "chunked" },
      body: [new TextEncoder().encode("x".repeat(20))],
    });
    assert.equal(response.status, 413);
  });

  it("answers 413 to an undeclared body above the limit that arrives with its headers", async (t) => {
    const server = await serve(t, async (request) => {
      await request.body.bytes(10);
      return { status: 204 };
    });
    const socket = connect(server.port, "127.0.0.1");
    const body = "x".repeat(20);
    // One write: headers and the whole chunked body arrive together.
    socket.end(
      `POST / HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n14\r\n${body}\r\n0\r\n\r\n`,
    );
    let answer = "";
    for await (const chunk of socket) answer += String(chunk);
    assert.match(answer, /^HTTP\/1\.1 413 /);
  });

  it("rejects the body read when the client goes away mid-body", async (t) => {
    const failed = deferred<unknown>();
    const called = deferred<void>();
    const server = await serve(t, async (request) => {
      called.resolve();
      try {
        await request.body.bytes(1000);
      } catch (error) {
        failed.resolve(error);
      }
      return { status: 204 };
    });
    const socket = connect(server.port, "127.0.0.1");
    socket.write("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\n");
    await called.promise;
    socket.write("partial");
    socket.destroy();
    assert.equal((await failed.promise as { code?: string }).code, "ERR_HTTP_ABORTED");
  });

  it("rejects the body read when the client went away before the handler asked for it", async (t) => {
    const failed = deferred<unknown>();
    const gone = deferred<void>();
    const called = deferred<void>();
    const server = await serve(t, async (request) => {
      // Like a route that checks a token first: the body is read only later.
      request.signal.addEventListener("abort", () => gone.resolve());
      called.resolve();
      await gone.promise;
      try {
        await request.body.bytes(1000);
      } catch (error) {
        failed.resolve(error);
      }
      return { status: 204 };
    });
    const socket = connect(server.port, "127.0.0.1");
    socket.write("POST / HTTP/1.1\r\nhost: x\r\ncontent-length: 100\r\n\r\npartial");
    await called.promise;
    socket.destroy();
    assert.equal((await failed.promise as { code?: string }).code, "ERR_HTTP_ABORTED");
  });

  it("refuses to read a body twice", async (t) => {
    const server = await serve(t, async (request) => {
      await request.body.bytes(10);
      await request.body.bytes(10);
      return { status: 204 };
    });
    const response = await fetch(`${server.url}/`, { method: "POST", body: "abc" });
    assert.equal(response.status, 500);
  });

  it("turns a thrown HttpError into a JSON error with its status and headers", async (t) => {
    const server = await serve(t, () => {
      throw new HttpError("ERR_HTTP_RATE_LIMITED", "slow down", {
        headers: { "retry-after": "7" },
      });
    });
    const response = await fetch(`${server.url}/`);
    assert.equal(response.status, 429);
    assert.equal(response.headers.get("retry-after"), "7");
    assert.equal(response.headers.get("content-type"), JSON_CONTENT_TYPE);
    assert.equal(errorCode(await response.text()), "ERR_HTTP_RATE_LIMITED");
  });

  it("does not call onError for an error with a known status", async (t) => {
    const errors: unknown[] = [];
    const server = await serve(t, () => {
      throw new HttpError("ERR_HTTP_NOT_FOUND", "gone");
    }, { onError: (e) => errors.push(e) });
    assert.equal((await fetch(`${server.url}/`)).status, 404);
    assert.deepEqual(errors, []);
  });

  it("answers an unknown error with 500, hides its message and calls onError", async (t) => {
    const errors: unknown[] = [];
    const failure = new Error("secret-internals");
    const server = await serve(t, async () => {
      throw failure;
    }, { onError: (e) => errors.push(e) });
    const response = await fetch(`${server.url}/`);
    assert.equal(response.status, 500);
    const text = await response.text();
    assert.equal(text.includes("secret-internals"), false);
    assert.equal(errorCode(text), "ERR_INTERNAL");
    assert.deepEqual(errors, [failure]);
  });

  it("answers an unknown error with 500 without an onError hook", async (t) => {
    const server = await serve(t, () => {
      throw new Error("x");
    });
    assert.equal((await fetch(`${server.url}/`)).status, 500);
  });

  it("sends a string body with its UTF-8 byte length", async (t) => {
    const server = await serve(t, () => ({ status: 200, headers: { "x-a": "1" }, body: "héllo" }));
    const response = await rawRequest(server.port);
    assert.equal(response.status, 200);
    assert.equal(response.headers["x-a"], "1");
    assert.equal(response.headers["content-length"], "6");
    assert.equal(response.body.toString(), "héllo");
  });

  it("sends a bytes body with its length", async (t) => {
    const server = await serve(t, () => ({ status: 200, body: new Uint8Array([0, 1, 2, 255]) }));
    const response = await rawRequest(server.port);
    assert.equal(response.headers["content-length"], "4");
    assert.deepEqual([...response.body], [0, 1, 2, 255]);
  });

  it("sends content-length 0 for a response without a body", async (t) => {
    const server = await serve(t, () => ({ status: 200 }));
    const response = await rawRequest(server.port);
    assert.equal(response.headers["content-length"], "0");
    assert.equal(response.body.length, 0);
  });

  it("sends no body for HEAD but the length of the GET body", async (t) => {
    const server = await serve(t, () => ({ status: 200, body: "hello" }));
    const response = await rawRequest(server.port, { method: "HEAD" });
    assert.equal(response.status, 200);
    assert.equal(response.headers["content-length"], "5");
    assert.equal(response.body.length, 0);
  });

  it("keeps a content-length the handler set", async (t) => {
    const server = await serve(t, () => ({ status: 200, headers: { "content-length": "42" } }));
    const response = await rawRequest(server.port, { method: "HEAD" });
    assert.equal(response.headers["content-length"], "42");
  });

  it("sends neither body nor content-length with 204", async (t) => {
    const server = await serve(t, () => ({
      status: 204,
      headers: { allow: "GET" },
      body: "ignored",
    }));
    const response = await rawRequest(server.port);
    assert.equal(response.status, 204);
    assert.equal(response.headers["allow"], "GET");
    assert.equal(response.headers["content-length"], undefined);
    assert.equal(response.body.length, 0);
  });

  it("streams an async-iterable body complete and in order", async (t) => {
    const count = 64;
    const size = 65_536;
    const server = await serve(t, () => ({
      status: 200,
      headers: { "content-type": "application/octet-stream" },
      body: (async function* (): AsyncGenerator<string | Uint8Array> {
        yield "start:";
        for (let i = 0; i < count; i++) yield new Uint8Array(size).fill(i);
        yield ":end";
      })(),
    }));
    const response = await fetch(`${server.url}/`);
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-length"), null);
    const bytes = new Uint8Array(await response.arrayBuffer());
    assert.equal(bytes.byteLength, 6 + count * size + 4);
    assert.equal(new TextDecoder().decode(bytes.subarray(0, 6)), "start:");
    assert.equal(new TextDecoder().decode(bytes.subarray(-4)), ":end");
    for (let i = 0; i < count; i++) {
      const chunk = bytes.subarray(6 + i * size, 6 + (i + 1) * size);
      assert.ok(chunk.every((b) => b === i), `chunk ${i} is out of place`);
    }
  });

  it("answers a stream failing with an HttpError before any chunk with its status", async (t) => {
    const server = await serve(t, () => ({
      status: 200,
      // deno-lint-ignore require-yield -- a stream that fails before its first chunk
      body: (async function* (): AsyncGenerator<string> {
        throw new HttpError("ERR_HTTP_UNAVAILABLE", "try later", {
          headers: { "retry-after": "5" },
        });
      })(),
    }));
    const response = await fetch(`${server.url}/`);
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    assert.equal(errorCode(await response.text()), "ERR_HTTP_UNAVAILABLE");
  });

  it("answers a stream that throws an unknown error before its first chunk with 500", async (t) => {
    const errors: unknown[] = [];
    const failure = new Error("secret-stream");
    const server = await serve(t, () => ({
      status: 200,
      // deno-lint-ignore require-yield -- a stream that fails before its first chunk
      body: (async function* (): AsyncGenerator<string> {
        throw failure;
      })(),
    }), { onError: (e) => errors.push(e) });
    const response = await fetch(`${server.url}/`);
    assert.equal(response.status, 500);
    const text = await response.text();
    assert.equal(text.includes("secret-stream"), false);
    assert.equal(errorCode(text), "ERR_INTERNAL");
    assert.deepEqual(errors, [failure]);
  });

  it("cuts the response off and calls onError when a stream fails after a chunk", async (t) => {
    const reported = deferred<unknown>();
    const failure = new Error("late failure");
    const server = await serve(t, () => ({
      status: 200,
      body: (async function* (): AsyncGenerator<string> {
        yield "partial";
        throw failure;
      })(),
    }), { onError: (e) => reported.resolve(e) });
    assert.equal(await fetchOutcome(`${server.url}/`), "cut off");
    assert.equal(await reported.promise, failure);
  });

  it("reports a non-Error thrown by a stream after its first chunk to onError", async (t) => {
    const reported = deferred<unknown>();
    const server = await serve(t, () => ({
      status: 200,
      body: (async function* (): AsyncGenerator<string> {
        yield "partial";
        throw "plain string failure";
      })(),
    }), { onError: (e) => reported.resolve(e) });
    assert.equal(await fetchOutcome(`${server.url}/`), "cut off");
    assert.equal(await reported.promise, "plain string failure");
  });

  it("calls return() on the stream's iterator when the client disconnects early", async (t) => {
    const closed = deferred<{ completed: boolean; sent: number }>();
    const server = await serve(t, (request) => ({
      status: 200,
      body: (async function* (): AsyncGenerator<string> {
        let completed = false;
        let sent = 0;
        try {
          yield "first";
          sent++;
          if (!request.signal.aborted) await once(request.signal, "abort");
          for (; sent < 1000; sent++) yield "more";
          completed = true;
        } finally {
          closed.resolve({ completed, sent });
        }
      })(),
    }));
    const req = httpRequest({ host: "127.0.0.1", port: server.port, path: "/", agent: false });
    req.on("error", () => {});
    req.end();
    const [res] = (await once(req, "response")) as [IncomingMessage];
    res.on("error", () => {});
    await once(res, "data");
    req.destroy();
    const outcome = await closed.promise;
    assert.equal(outcome.completed, false);
    assert.ok(outcome.sent < 1000);
  });

  it("closes a streamed body without sending it for HEAD", async (t) => {
    let pulled = 0;
    let returned = false;
    const body: BodyChunks = {
      [Symbol.asyncIterator]: () => ({
        next: () => {
          pulled++;
          return Promise.resolve({ done: false, value: "x" });
        },
        return: () => {
          returned = true;
          return Promise.resolve({ done: true, value: undefined });
        },
      }),
    };
    const server = await serve(t, () => ({ status: 200, body }));
    const response = await rawRequest(server.port, { method: "HEAD" });
    assert.equal(response.status, 200);
    assert.equal(response.body.length, 0);
    assert.equal(returned, true);
    assert.equal(pulled, 0);
  });

  it("returns a listener usable with http.createServer", () => {
    assert.equal(typeof createNodeListener(() => ({ status: 204 })), "function");
  });
});

describe("createNodeListener() with a body in parts", () => {
  it("sends the parts in order with their total content-length", async () => {
    const { createServer } = await import("node:http");
    const server = createServer(createNodeListener(() => ({
      status: 200,
      headers: { "content-type": "text/plain" },
      body: [
        new TextEncoder().encode("ab"),
        new TextEncoder().encode("cde"),
        new Uint8Array(0),
        new TextEncoder().encode("f"),
      ],
    })));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const address = server.address() as { port: number };
      const response = await fetch(`http://127.0.0.1:${address.port}/`);
      assert.equal(response.headers.get("content-length"), "6");
      assert.equal(await response.text(), "abcdef");
      const head = await fetch(`http://127.0.0.1:${address.port}/`, { method: "HEAD" });
      assert.equal(head.headers.get("content-length"), "6");
      assert.equal(await head.text(), "");
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe("node adapter: request ids and the access log's hook", () => {
  it(
    "gives each response an X-Request-Id, a trusted proxy's own when it sends a plain one, and tells onResponse of it",
    NETWORK,
    async (t) => {
      const entries: ResponseEntry[] = [];
      let n = 0;
      const server = await serve(t, () => ({ status: 200, body: "hello" }), {
        requestId: () => `id-${++n}`,
        trustedProxies: parseTrustedProxies("127.0.0.2"),
        onResponse: (entry) => entries.push(entry),
      });
      const fresh = await requestFrom(server.url, "/a?key=secret");
      assert.equal(fresh.headers["x-request-id"], "id-1");
      const proxied = await requestFrom(server.url, "/b", {
        from: "127.0.0.2",
        headers: { "x-request-id": "edge-7f3a" },
      });
      assert.equal(proxied.headers["x-request-id"], "edge-7f3a", "a trusted proxy's id is kept");
      const spoofed = await requestFrom(server.url, "/c", {
        headers: { "x-request-id": "made-up" },
      });
      assert.equal(spoofed.headers["x-request-id"], "id-2", "anyone else's is replaced");
      const odd = await requestFrom(server.url, "/d", {
        from: "127.0.0.2",
        headers: { "x-request-id": "has space" },
      });
      assert.equal(odd.headers["x-request-id"], "id-3", "a malformed one is replaced");
      assert.deepEqual(
        entries.map((
          entry,
        ) => [entry.method, entry.status, entry.bytes, entry.requestId, entry.aborted]),
        [
          ["GET", 200, 5, "id-1", false],
          ["GET", 200, 5, "edge-7f3a", false],
          ["GET", 200, 5, "id-2", false],
          ["GET", 200, 5, "id-3", false],
        ],
      );
      assert.equal(entries[0]!.request?.path, "/a");
      assert.ok(entries.every((entry) => entry.durationMs >= 0));
    },
  );

  it(
    "counts a streamed body's bytes once it is sent whole, and an error's status and body",
    NETWORK,
    async (t) => {
      const entries: ResponseEntry[] = [];
      let clock = 0;
      const server = await serve(t, (request) => {
        if (request.path === "/fail") {
          throw new HttpError("ERR_HTTP_NOT_FOUND", "Cannot find /fail");
        }
        return {
          status: 200,
          body: (async function* () {
            yield "ab";
            yield new Uint8Array([1, 2, 3]);
            yield "é";
          })(),
        };
      }, { onResponse: (entry) => entries.push(entry), now: () => (clock += 5) });
      assert.equal((await requestFrom(server.url, "/stream")).status, 200);
      const failed = await requestFrom(server.url, "/fail");
      assert.equal(failed.status, 404);
      assert.equal(failed.headers["x-request-id"], undefined, "no ids unless asked for");
      assert.deepEqual(entries.map((entry) => [entry.status, entry.bytes, entry.durationMs]), [[
        200,
        7,
        5,
      ], [404, Buffer.byteLength(failed.text), 5]]);
    },
  );
});

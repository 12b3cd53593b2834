import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type BodyChunks,
  createFetchHandler,
  type Handler,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  readJson,
} from "../../lib/http/mod.ts";
import { JSON_CONTENT_TYPE } from "../../lib/http/json_response.ts";

/** Calls the fetch handler and returns what the inner handler saw. */
async function seenBy(request: Request, remoteAddress?: string): Promise<HttpRequest> {
  let seen: HttpRequest | undefined;
  const fetchHandler = createFetchHandler((r) => {
    seen = r;
    return { status: 204 };
  }, remoteAddress === undefined ? {} : { remoteAddress });
  await fetchHandler(request);
  assert.ok(seen !== undefined);
  return seen;
}

function answering(response: HttpResponse): (request: Request) => Promise<Response> {
  return createFetchHandler(() => response);
}

/**
 * A stream body whose `closed` promise settles when its generator ends: with
 * `true` when it was closed early through `return()`, `false` when it ran out.
 */
function tracked(
  chunks: readonly (string | Uint8Array)[],
): { body: BodyChunks; closed: Promise<boolean> } {
  let settle: (early: boolean) => void = () => {};
  const closed = new Promise<boolean>((resolve) => {
    settle = resolve;
  });
  async function* generate(): AsyncGenerator<string | Uint8Array> {
    let completed = false;
    try {
      yield* chunks;
      completed = true;
    } finally {
      settle(!completed);
    }
  }
  return { body: generate(), closed };
}

describe("createFetchHandler()", () => {
  it("maps method, raw path, raw query and origin from the request URL", async () => {
    const seen = await seenBy(new Request("http://example.org:8080/a/%24b?x=1&y=%20"));
    assert.equal(seen.method, "GET");
    assert.equal(seen.path, "/a/%24b");
    assert.equal(seen.query, "x=1&y=%20");
    assert.equal(seen.origin, "http://example.org:8080");
  });

  it("gives an empty query when the URL has none", async () => {
    assert.equal((await seenBy(new Request("http://example.org/a"))).query, "");
  });

  it("upper-cases the method", async () => {
    const seen = await seenBy(new Request("http://example.org/", { method: "propfind" }));
    assert.equal(seen.method, "PROPFIND");
  });

  it("gives header names in lower case", async () => {
    const request = new Request("http://example.org/", { headers: { "X-Custom": "Value" } });
    const seen = await seenBy(request);
    assert.equal(seen.headers["x-custom"], "Value");
    assert.equal(seen.headers["X-Custom"], undefined);
  });

  it("reports an empty remote address by default", async () => {
    assert.equal((await seenBy(new Request("http://example.org/"))).remoteAddress, "");
  });

  it("reports the configured remote address", async () => {
    const seen = await seenBy(new Request("http://example.org/"), "203.0.113.9");
    assert.equal(seen.remoteAddress, "203.0.113.9");
  });

  it("passes on the request's abort signal", async () => {
    const controller = new AbortController();
    const seen = await seenBy(new Request("http://example.org/", { signal: controller.signal }));
    assert.equal(seen.signal.aborted, false);
    controller.abort();
    assert.equal(seen.signal.aborted, true);
  });

  it("lets the handler read the body as JSON", async () => {
    const fetchHandler = createFetchHandler(async (r) => ({
      status: 200,
      body: JSON.stringify(await readJson(r)),
    }));
    const response = await fetchHandler(
      new Request("http://example.org/", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: '{"a":1}',
      }),
    );
    assert.deepEqual(await response.json(), { a: 1 });
  });

  it("reads an absent body as no bytes", async () => {
    let length = -1;
    await createFetchHandler(async (r) => {
      length = (await r.body.bytes(10)).byteLength;
      return { status: 204 };
    })(new Request("http://example.org/"));
    assert.equal(length, 0);
  });

  it("answers a body above the limit with 413", async () => {
    const fetchHandler = createFetchHandler(async (r) => {
      await r.body.bytes(4);
      return { status: 204 };
    });
    const request = new Request("http://example.org/", { method: "POST", body: "0123456789" });
    const response = await fetchHandler(request);
    assert.equal(response.status, 413);
  });

  it("turns a thrown HttpError into a JSON error with its status and headers", async () => {
    const fetchHandler = createFetchHandler(() => {
      throw new HttpError("ERR_HTTP_RATE_LIMITED", "slow", { headers: { "retry-after": "3" } });
    });
    const response = await fetchHandler(new Request("http://example.org/"));
    assert.equal(response.status, 429);
    assert.equal(response.headers.get("retry-after"), "3");
    assert.equal(response.headers.get("content-type"), JSON_CONTENT_TYPE);
    const body = (await response.json()) as { error: { code: string } };
    assert.equal(body.error.code, "ERR_HTTP_RATE_LIMITED");
  });

  it("does not call onError for an error with a known status", async () => {
    const errors: unknown[] = [];
    const fetchHandler = createFetchHandler(() => {
      throw new HttpError("ERR_HTTP_NOT_FOUND", "gone");
    }, { onError: (e) => errors.push(e) });
    assert.equal((await fetchHandler(new Request("http://example.org/"))).status, 404);
    assert.deepEqual(errors, []);
  });

  it("answers an unknown error with 500, hides its message and calls onError", async () => {
    const errors: unknown[] = [];
    const failure = new Error("secret-internals");
    const fetchHandler = createFetchHandler(() => {
      throw failure;
    }, { onError: (e) => errors.push(e) });
    const response = await fetchHandler(new Request("http://example.org/"));
    assert.equal(response.status, 500);
    const text = await response.text();
    assert.equal(text.includes("secret-internals"), false);
    assert.equal((JSON.parse(text) as { error: { code: string } }).error.code, "ERR_INTERNAL");
    assert.deepEqual(errors, [failure]);
  });

  it("answers an unknown error with 500 without an onError hook", async () => {
    const fetchHandler = createFetchHandler(() => Promise.reject(new Error("x")));
    assert.equal((await fetchHandler(new Request("http://example.org/"))).status, 500);
  });

  it("sends a string body with status and headers", async () => {
    const response = await answering({ status: 201, headers: { "x-a": "1" }, body: "héllo" })(
      new Request("http://example.org/"),
    );
    assert.equal(response.status, 201);
    assert.equal(response.headers.get("x-a"), "1");
    assert.equal(await response.text(), "héllo");
  });

  it("sends a bytes body", async () => {
    const response = await answering({ status: 200, body: new Uint8Array([1, 2, 3]) })(
      new Request("http://example.org/"),
    );
    assert.deepEqual(new Uint8Array(await response.arrayBuffer()), new Uint8Array([1, 2, 3]));
  });

  it("sends a null body when the response has none", async () => {
    const response = await answering({ status: 200 })(new Request("http://example.org/"));
    assert.equal(response.body, null);
  });

  it("streams an async-iterable body complete and in order", async () => {
    const chunks: (string | Uint8Array)[] = [];
    let expected = "";
    for (let i = 0; i < 50; i++) {
      const text = `${i},`;
      chunks.push(i % 2 === 0 ? text : new TextEncoder().encode(text));
      expected += text;
    }
    const { body, closed } = tracked(chunks);
    const response = await answering({ status: 200, body })(new Request("http://example.org/"));
    assert.equal(await response.text(), expected);
    assert.equal(await closed, false);
  });

  it("answers a stream failing with an HttpError before any chunk with its status", async () => {
    // deno-lint-ignore require-yield -- a stream that fails before its first chunk
    const body = (async function* (): AsyncGenerator<string> {
      throw new HttpError("ERR_HTTP_UNAVAILABLE", "later", { headers: { "retry-after": "5" } });
    })();
    const response = await answering({ status: 200, body })(new Request("http://example.org/"));
    assert.equal(response.status, 503);
    assert.equal(response.headers.get("retry-after"), "5");
    const json = (await response.json()) as { error: { code: string } };
    assert.equal(json.error.code, "ERR_HTTP_UNAVAILABLE");
  });

  it("answers a stream failing before its first chunk with 500 and calls onError", async () => {
    const errors: unknown[] = [];
    const failure = new Error("secret-stream");
    // deno-lint-ignore require-yield -- a stream that fails before its first chunk
    const body = (async function* (): AsyncGenerator<string> {
      throw failure;
    })();
    const fetchHandler = createFetchHandler(() => ({ status: 200, body }), {
      onError: (e) => errors.push(e),
    });
    const response = await fetchHandler(new Request("http://example.org/"));
    assert.equal(response.status, 500);
    assert.equal((await response.text()).includes("secret-stream"), false);
    assert.deepEqual(errors, [failure]);
  });

  it("fails the body read when a stream throws after its first chunk", async () => {
    const body = (async function* (): AsyncGenerator<string> {
      yield "partial";
      throw new Error("late");
    })();
    const response = await answering({ status: 200, body })(new Request("http://example.org/"));
    assert.equal(response.status, 200);
    await assert.rejects(response.text());
  });

  it("keeps the status and headers of a streamed response", async () => {
    const { body } = tracked(["a"]);
    const response = await answering({ status: 206, headers: { "x-part": "1" }, body })(
      new Request("http://example.org/"),
    );
    assert.equal(response.status, 206);
    assert.equal(response.headers.get("x-part"), "1");
    assert.equal(await response.text(), "a");
  });

  it("sends an empty body for a stream without chunks", async () => {
    const { body } = tracked([]);
    const response = await answering({ status: 200, body })(new Request("http://example.org/"));
    assert.equal(await response.text(), "");
  });

  it("calls return() on the stream's iterator when the reader cancels", async () => {
    const { body, closed } = tracked(["a", "b", "c"]);
    const response = await answering({ status: 200, body })(new Request("http://example.org/"));
    assert.ok(response.body !== null);
    const reader = response.body.getReader();
    const first = await reader.read();
    assert.deepEqual(first.value, new TextEncoder().encode("a"));
    await reader.cancel();
    assert.equal(await closed, true);
  });

  const bodiless = [
    { name: "sends a null body for HEAD", method: "HEAD", status: 200 },
    { name: "sends a null body with 204", method: "GET", status: 204 },
    { name: "sends a null body with 304", method: "GET", status: 304 },
  ] as const;
  for (const c of bodiless) {
    it(c.name, async () => {
      const response = await answering({ status: c.status, body: "ignored" })(
        new Request("http://example.org/", { method: c.method }),
      );
      assert.equal(response.status, c.status);
      assert.equal(response.body, null);
    });
  }

  it("closes a streamed body it does not send for HEAD", async () => {
    const { body, closed } = tracked(["a", "b"]);
    const iterator = body[Symbol.asyncIterator]();
    await iterator.next(); // started, so that return() runs the generator's finally
    const started: BodyChunks = { [Symbol.asyncIterator]: () => iterator };
    const response = await answering({ status: 200, body: started })(
      new Request("http://example.org/", { method: "HEAD" }),
    );
    assert.equal(response.body, null);
    assert.equal(await closed, true);
  });

  it("passes the handler's headers on a bodiless response", async () => {
    const handler: Handler = () => ({ status: 204, headers: { allow: "GET, HEAD, OPTIONS" } });
    const request = new Request("http://example.org/", { method: "OPTIONS" });
    const response = await createFetchHandler(handler)(request);
    assert.equal(response.headers.get("allow"), "GET, HEAD, OPTIONS");
  });
});

describe("createFetchHandler() with a body in parts", () => {
  it("joins the parts in order", async () => {
    const handler = createFetchHandler(() => ({
      status: 200,
      body: [new TextEncoder().encode("ab"), new TextEncoder().encode("c")],
    }));
    const response = await handler(new Request("http://127.0.0.1/"));
    assert.equal(await response.text(), "abc");
  });
});

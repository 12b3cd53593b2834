import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkJsonDepth } from "../../lib/http/read_json.ts";
import { createBodyReader } from "../../lib/http/read_body.ts";
import { type HttpRequest, readJson } from "../../lib/http/mod.ts";
import { statusOf } from "../../lib/http/error_response.ts";
import { makeRequest } from "../_helpers/http.ts";

const JSON_HEADERS = { "content-type": "application/json" } as const;

/** A POST request with a JSON content type unless other headers are given. */
function post(
  body: string | Uint8Array | readonly (string | Uint8Array)[],
  headers: Readonly<Record<string, string>> = JSON_HEADERS,
): HttpRequest {
  return makeRequest({ method: "POST", headers, body });
}

function nested(depth: number): string {
  return "[".repeat(depth) + "]".repeat(depth);
}

describe("readJson()", () => {
  it("parses a JSON body", async () => {
    const request = post('{"a":[1,true,null]}');
    assert.deepEqual(await readJson(request), { a: [1, true, null] });
  });

  const accepted = [
    { name: "accepts a charset parameter", type: "application/json; charset=utf-8" },
    { name: "accepts the type in upper case", type: "Application/JSON" },
    { name: "accepts application/merge-patch+json", type: "application/merge-patch+json" },
    { name: "accepts any '+json' suffix", type: "application/geo+json;charset=UTF-8" },
  ] as const;
  for (const c of accepted) {
    it(c.name, async () => {
      const request = post("[1]", { "content-type": c.type });
      assert.deepEqual(await readJson(request), [1]);
    });
  }

  const refusedTypes = [
    {
      name: "refuses text/plain with ERR_HTTP_UNSUPPORTED_MEDIA_TYPE",
      headers: { "content-type": "text/plain" },
    },
    { name: "refuses a missing content type with ERR_HTTP_UNSUPPORTED_MEDIA_TYPE", headers: {} },
    {
      name: "refuses a form content type with ERR_HTTP_UNSUPPORTED_MEDIA_TYPE",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    },
  ] as const;
  for (const c of refusedTypes) {
    it(c.name, async () => {
      const request = makeRequest({ method: "POST", headers: c.headers, body: "{}" });
      await assert.rejects(readJson(request), {
        name: "HttpError",
        code: "ERR_HTTP_UNSUPPORTED_MEDIA_TYPE",
      });
    });
  }

  it("maps a wrong content type to status 415", async () => {
    const request = post("a", { "content-type": "text/csv" });
    assert.equal(statusOf(await readJson(request).catch((e: unknown) => e)), 415);
  });

  it("refuses a declared content-length above maxBytes with ERR_HTTP_BODY_TOO_LARGE", async () => {
    const request = makeRequest({
      method: "POST",
      headers: { ...JSON_HEADERS, "content-length": "11" },
      body: '"0123456789"'.slice(0, 11),
    });
    await assert.rejects(readJson(request, { maxBytes: 10 }), {
      name: "HttpError",
      code: "ERR_HTTP_BODY_TOO_LARGE",
    });
  });

  it("refuses a streamed body that grows past maxBytes with ERR_HTTP_BODY_TOO_LARGE", async () => {
    const request = post(['"01234', "56789", '"']);
    await assert.rejects(readJson(request, { maxBytes: 10 }), {
      name: "HttpError",
      code: "ERR_HTTP_BODY_TOO_LARGE",
    });
  });

  it("accepts a body of exactly maxBytes", async () => {
    const request = post(['"0123', '4567"']);
    assert.equal(await readJson(request, { maxBytes: 10 }), "01234567");
  });

  it("refuses more than 1 MiB by default", async () => {
    const big = `"${"x".repeat(1_048_576)}"`;
    const request = makeRequest({ method: "POST", headers: JSON_HEADERS, body: big });
    await assert.rejects(readJson(request), { code: "ERR_HTTP_BODY_TOO_LARGE" });
  });

  it("decodes a character split across chunks", async () => {
    const bytes = new TextEncoder().encode('"é"');
    const request = makeRequest({
      method: "POST",
      headers: JSON_HEADERS,
      body: [bytes.subarray(0, 2), bytes.subarray(2)],
    });
    assert.equal(await readJson(request), "é");
  });

  it("refuses invalid UTF-8 with ERR_HTTP_INVALID_JSON", async () => {
    const request = makeRequest({
      method: "POST",
      headers: JSON_HEADERS,
      body: new Uint8Array([0x22, 0xff, 0xfe, 0x22]),
    });
    await assert.rejects(readJson(request), { name: "HttpError", code: "ERR_HTTP_INVALID_JSON" });
  });

  const invalid = [
    { name: "refuses an unterminated object with ERR_HTTP_INVALID_JSON", body: '{"a":' },
    { name: "refuses an empty body with ERR_HTTP_INVALID_JSON", body: "" },
    { name: "refuses single quotes with ERR_HTTP_INVALID_JSON", body: "{'a':1}" },
    { name: "refuses trailing text with ERR_HTTP_INVALID_JSON", body: "{} x" },
  ] as const;
  for (const c of invalid) {
    it(c.name, async () => {
      const request = makeRequest({ method: "POST", headers: JSON_HEADERS, body: c.body });
      await assert.rejects(readJson(request), { name: "HttpError", code: "ERR_HTTP_INVALID_JSON" });
    });
  }

  it("maps invalid JSON to status 400", async () => {
    const request = makeRequest({ method: "POST", headers: JSON_HEADERS, body: "{" });
    assert.equal(statusOf(await readJson(request).catch((e: unknown) => e)), 400);
  });

  it("refuses nesting 33 deep with maxDepth 32 with ERR_HTTP_JSON_TOO_DEEP", async () => {
    const request = makeRequest({ method: "POST", headers: JSON_HEADERS, body: nested(33) });
    await assert.rejects(readJson(request, { maxDepth: 32 }), {
      name: "HttpError",
      code: "ERR_HTTP_JSON_TOO_DEEP",
    });
  });

  it("accepts nesting exactly 32 deep with maxDepth 32", async () => {
    const request = makeRequest({ method: "POST", headers: JSON_HEADERS, body: nested(32) });
    assert.ok(Array.isArray(await readJson(request, { maxDepth: 32 })));
  });

  it("limits nesting to 32 by default", async () => {
    const request = makeRequest({ method: "POST", headers: JSON_HEADERS, body: nested(33) });
    await assert.rejects(readJson(request), { code: "ERR_HTTP_JSON_TOO_DEEP" });
  });

  it("checks the depth before parsing, so deep invalid JSON is refused as too deep", async () => {
    const request = post("[".repeat(100_000));
    await assert.rejects(readJson(request), { code: "ERR_HTTP_JSON_TOO_DEEP" });
  });

  it("reads the body only once", async () => {
    const request = makeRequest({ method: "POST", headers: JSON_HEADERS, body: "{}" });
    await readJson(request);
    await assert.rejects(readJson(request), { name: "TypeError" });
  });
});

describe("checkJsonDepth()", () => {
  const passing = [
    { name: "accepts a scalar at depth 0", text: "1", maxDepth: 0 },
    { name: "accepts nesting equal to maxDepth", text: '{"a":[{"b":[]}]}', maxDepth: 4 },
    {
      name: "does not count brackets inside strings",
      text: `{"a":"${"[{".repeat(40)}"}`,
      maxDepth: 1,
    },
    {
      name: "does not end a string at an escaped quote",
      text: String.raw`{"a":"\"[[[[\""}`,
      maxDepth: 1,
    },
    { name: "counts siblings at the same depth once", text: "[[],[],[],[]]", maxDepth: 2 },
  ] as const;
  for (const c of passing) {
    it(c.name, () => assert.doesNotThrow(() => checkJsonDepth(c.text, c.maxDepth)));
  }

  const failing = [
    { name: "refuses nesting one deeper than maxDepth", text: nested(33), maxDepth: 32 },
    { name: "counts objects and arrays alike", text: '{"a":[{"b":[]}]}', maxDepth: 3 },
    {
      name: "ends a string after an escaped backslash",
      text: String.raw`["\\", [[1]]]`,
      maxDepth: 2,
    },
    { name: "refuses any nesting with maxDepth 0", text: "[]", maxDepth: 0 },
  ] as const;
  for (const c of failing) {
    it(c.name, () => {
      assert.throws(() => checkJsonDepth(c.text, c.maxDepth), {
        name: "HttpError",
        code: "ERR_HTTP_JSON_TOO_DEEP",
      });
    });
  }
});

describe("createBodyReader()", () => {
  async function* chunks(...parts: string[]): AsyncGenerator<Uint8Array> {
    for (const part of parts) yield new TextEncoder().encode(part);
  }

  it("joins the chunks in order", async () => {
    const reader = createBodyReader(() => chunks("ab", "cd", "e"), undefined);
    assert.equal(new TextDecoder().decode(await reader.bytes(100)), "abcde");
  });

  it("gives an empty array for a body without chunks", async () => {
    const reader = createBodyReader(() => chunks(), undefined);
    assert.deepEqual(await reader.bytes(100), new Uint8Array(0));
  });

  it("refuses a declared length above the limit without opening the stream", async () => {
    let opened = false;
    const reader = createBodyReader(() => {
      opened = true;
      return chunks("x");
    }, "1000");
    await assert.rejects(reader.bytes(10), { name: "HttpError", code: "ERR_HTTP_BODY_TOO_LARGE" });
    assert.equal(opened, false);
  });

  it("still counts the bytes when the declared length is too small", async () => {
    const reader = createBodyReader(() => chunks("0123456789", "x"), "5");
    await assert.rejects(reader.bytes(10), { code: "ERR_HTTP_BODY_TOO_LARGE" });
  });

  it("stops reading at the first chunk past the limit", async () => {
    let pulled = 0;
    async function* counted(): AsyncGenerator<Uint8Array> {
      for (let i = 0; i < 100; i++) {
        pulled++;
        yield new Uint8Array(4);
      }
    }
    const reader = createBodyReader(counted, undefined);
    await assert.rejects(reader.bytes(10), { code: "ERR_HTTP_BODY_TOO_LARGE" });
    assert.equal(pulled, 3);
  });

  it("throws TypeError when the body is read twice", async () => {
    const reader = createBodyReader(() => chunks("a"), undefined);
    await reader.bytes(10);
    await assert.rejects(reader.bytes(10), { name: "TypeError" });
  });
});

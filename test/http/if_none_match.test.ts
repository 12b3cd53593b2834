import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type HttpRequest } from "../../lib/http/mod.ts";
import { ifNoneMatch } from "../../lib/http/if_none_match.ts";

function request(header: string | undefined): HttpRequest {
  return {
    method: "GET",
    path: "/",
    query: "",
    headers: header === undefined ? {} : { "if-none-match": header },
    remoteAddress: "127.0.0.1",
    origin: "http://127.0.0.1",
    signal: new AbortController().signal,
    body: { bytes: () => Promise.resolve(new Uint8Array(0)) },
  };
}

describe("ifNoneMatch()", () => {
  const cases = [
    { name: "does not match without the header", header: undefined, expected: false },
    { name: "matches the same tag", header: '"r1"', expected: true },
    { name: "does not match another tag", header: '"r2"', expected: false },
    { name: "matches a tag in a list", header: '"r0", "r1" ,"r2"', expected: true },
    { name: "compares weakly: W/ is ignored", header: 'W/"r1"', expected: true },
    { name: "matches * for any current representation", header: " * ", expected: true },
    { name: "does not match an unquoted tag", header: "r1", expected: false },
    { name: "does not match an empty header", header: "", expected: false },
  ] as const;
  for (const c of cases) {
    it(c.name, () => assert.equal(ifNoneMatch(request(c.header), '"r1"'), c.expected));
  }

  it("matches a weak current tag", () =>
    assert.equal(ifNoneMatch(request('"r1"'), 'W/"r1"'), true));
});

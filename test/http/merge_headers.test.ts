import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { mergeHeaders } from "../../lib/http/_internal.ts";

describe("mergeHeaders", () => {
  it("copies the base, then the extra headers, which win, into a new record", () => {
    const base = { "content-type": "text/plain", vary: "Origin" };
    const extra = { vary: "Accept-Encoding", "x-request-id": "a-1" };
    const merged = mergeHeaders(base, extra);
    assert.deepEqual(merged, {
      "content-type": "text/plain",
      vary: "Accept-Encoding",
      "x-request-id": "a-1",
    });
    assert.deepEqual(Object.keys(merged), ["content-type", "vary", "x-request-id"]);
    assert.notEqual(merged, base);
    assert.deepEqual(base, { "content-type": "text/plain", vary: "Origin" }, "base unchanged");
  });

  it("takes no base or no extra, and gives a record the caller may add to", () => {
    const none = mergeHeaders(undefined);
    none["etag"] = '"1"';
    assert.deepEqual(none, { etag: '"1"' });
    const frozen = Object.freeze({ pragma: "no-cache" });
    const copy = mergeHeaders(frozen);
    copy["cache-control"] = "no-store";
    assert.deepEqual(copy, { pragma: "no-cache", "cache-control": "no-store" });
  });
});

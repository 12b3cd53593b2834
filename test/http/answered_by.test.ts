import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { answeredBy, noteAnsweredBy } from "../../lib/http/mod.ts";
import { makeRequest } from "../_helpers/http.ts";

describe("noteAnsweredBy() and answeredBy()", () => {
  it("give back the note of a request, and nothing for a request never noted", () => {
    const noted = makeRequest({ path: "/items/1" });
    const other = makeRequest({ path: "/items/2" });
    const by = { service: "items", route: "/items/:id" };
    noteAnsweredBy(noted, by);
    assert.equal(answeredBy(noted), by);
    assert.equal(answeredBy(other), undefined);
  });

  it("keep the last note when a request is noted twice", () => {
    const request = makeRequest();
    noteAnsweredBy(request, { service: "host", route: "other" });
    noteAnsweredBy(request, { service: "water", route: "/v1/odata/v4/Locations" });
    assert.deepEqual(answeredBy(request), { service: "water", route: "/v1/odata/v4/Locations" });
  });

  it("note a frozen request record too, beside it", () => {
    const request = Object.freeze(makeRequest());
    const by = { service: "sync", route: "/api/v2/sync/user" };
    noteAnsweredBy(request, by);
    assert.equal(answeredBy(request), by);
    assert.equal(
      Object.getOwnPropertySymbols(request).length,
      0,
      "the frozen record itself is unchanged",
    );
  });

  it("add no enumerable property, so a record's keys and JSON stay as they were", () => {
    const request = makeRequest({ path: "/x" });
    const keys = Object.keys(request);
    noteAnsweredBy(request, { service: "s", route: "/x" });
    assert.deepEqual(Object.keys(request), keys);
  });
});

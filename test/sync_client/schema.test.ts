// The client's copy of the schema agrees with the server's (lib/sync/schema.ts):
// the client imports nothing of the server, so this test is what ties them.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ENTITIES, ENTITY_NAMES } from "../../lib/sync/mod.ts";
import { DEFAULTS, ENTITY_NAMES as CLIENT_NAMES } from "../../lib/sync_client/_state.ts";
import { nextDelay, parseRetryAfter } from "../../lib/sync_client/mod.ts";

describe("the sync client's schema", () => {
  it("names the server's entities", () => {
    assert.deepEqual(CLIENT_NAMES, ENTITY_NAMES);
  });

  it("fills the defaults the server fills", () => {
    for (const name of ENTITY_NAMES) {
      const expected = Object.fromEntries(
        ENTITIES[name].fields.filter((field) => "default" in field).map((field) => [
          field.name,
          field.default,
        ]),
      );
      assert.deepEqual(DEFAULTS[name], expected, name);
    }
  });
});

describe("nextDelay()", () => {
  const cases = [
    { name: "draws under the first ceiling", attempt: 0, draw: 0.5, expected: 250 },
    { name: "doubles the ceiling per attempt", attempt: 3, draw: 0.5, expected: 2000 },
    { name: "caps the ceiling", attempt: 30, draw: 0.5, expected: 30_000 },
    { name: "may draw no wait at all (full jitter)", attempt: 5, draw: 0, expected: 0 },
  ] as const;
  for (const c of cases) it(c.name, () => assert.equal(nextDelay(c.attempt, c.draw), c.expected));

  it("takes the server's Retry-After instead", () => {
    assert.equal(nextDelay(3, 0.5, {}, 7000), 7000);
  });

  it("refuses a negative attempt and a draw outside [0, 1)", () => {
    assert.throws(() => nextDelay(-1, 0.5), RangeError);
    assert.throws(() => nextDelay(0, 1), RangeError);
  });
});

describe("parseRetryAfter()", () => {
  it("reads seconds and HTTP dates", () => {
    const now = Date.UTC(2026, 10, 24, 8);
    assert.equal(parseRetryAfter("7", now), 7000);
    assert.equal(parseRetryAfter(new Date(now + 3000).toUTCString(), now), 3000);
    assert.equal(parseRetryAfter("soon", now), undefined);
    assert.equal(parseRetryAfter(null, now), undefined);
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createDeadline } from "../../lib/http/mod.ts";
import { statusOf } from "../../lib/http/error_response.ts";

describe("createDeadline()", () => {
  it("sets expiresAt to the clock reading plus the timeout", () => {
    const deadline = createDeadline(500, () => 1000);
    assert.equal(deadline.expiresAt, 1500);
  });

  it("lets check() pass before the deadline", () => {
    let t = 0;
    const deadline = createDeadline(100, () => t);
    t = 99;
    assert.doesNotThrow(() => deadline.check());
  });

  it("lets check() pass exactly at the deadline", () => {
    let t = 0;
    const deadline = createDeadline(100, () => t);
    t = 100;
    assert.doesNotThrow(() => deadline.check());
    assert.equal(deadline.expired(), false);
  });

  it("makes check() throw ERR_HTTP_TIMEOUT once the clock passes the deadline", () => {
    let t = 0;
    const deadline = createDeadline(100, () => t);
    t = 101;
    assert.throws(() => deadline.check(), { name: "HttpError", code: "ERR_HTTP_TIMEOUT" });
  });

  it("raises an error that maps to status 408", () => {
    let t = 0;
    const deadline = createDeadline(1, () => t);
    t = 2;
    let caught: unknown;
    try {
      deadline.check();
    } catch (error) {
      caught = error;
    }
    assert.equal(statusOf(caught), 408);
  });

  it("reports expired() as false before and true after the deadline", () => {
    let t = 10;
    const deadline = createDeadline(5, () => t);
    assert.equal(deadline.expired(), false);
    t = 16;
    assert.equal(deadline.expired(), true);
  });

  it("never expires with an infinite timeout", () => {
    let t = 0;
    const deadline = createDeadline(Infinity, () => t);
    t = Number.MAX_SAFE_INTEGER;
    assert.equal(deadline.expired(), false);
    assert.doesNotThrow(() => deadline.check());
  });

  it("expires a zero timeout as soon as the clock moves", () => {
    let t = 0;
    const deadline = createDeadline(0, () => t);
    assert.equal(deadline.expired(), false);
    t = 1;
    assert.equal(deadline.expired(), true);
  });

  const invalid = [
    { name: "refuses a negative timeout with RangeError", timeout: -1 },
    { name: "refuses a NaN timeout with RangeError", timeout: Number.NaN },
  ] as const;
  for (const c of invalid) {
    it(c.name, () => {
      assert.throws(() => createDeadline(c.timeout, () => 0), { name: "RangeError" });
    });
  }
});

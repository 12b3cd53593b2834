import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ScratchBuffers } from "../../lib/water/render/scratch_buffers.ts";

describe("ScratchBuffers", () => {
  it("hands out a buffer given back (by a view of it) again instead of a new one", () => {
    const buffers = new ScratchBuffers(1024, 2);
    const first = buffers.take();
    assert.equal(first.length, 1024);
    first[0] = 7;
    buffers.give(first.subarray(10, 20));
    assert.equal(buffers.idle, 1);
    const again = buffers.take();
    assert.equal(again.buffer, first.buffer);
    assert.equal(again.length, 1024, "the whole buffer, not the view given back");
    assert.equal(again[0], 7, "as it was left");
    assert.notEqual(buffers.take().buffer, first.buffer, "none idle: a new one");
  });

  it("ignores memory not its own and a buffer given back twice, and keeps at most `keep` idle", () => {
    const buffers = new ScratchBuffers(64, 2);
    buffers.give(new Uint8Array(64));
    assert.equal(buffers.idle, 0);
    const [a, b, c] = [buffers.take(), buffers.take(), buffers.take()];
    buffers.give(a);
    buffers.give(a.subarray(1));
    assert.equal(buffers.idle, 1, "given twice, kept once");
    buffers.give(b);
    buffers.give(c);
    assert.equal(buffers.idle, 2);
    const taken = new Set([buffers.take().buffer, buffers.take().buffer]);
    assert.equal(taken.size, 2);
    assert.ok(taken.has(a.buffer) && taken.has(b.buffer));
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createMessageIds } from "../../lib/relay/message_ids.ts";

const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/** The milliseconds a ULID holds. */
function timeOf(id: string): number {
  let time = 0;
  for (const char of id.slice(4, 14)) time = time * 32 + CROCKFORD.indexOf(char);
  return time;
}

function fixed(...bytes: number[]): (size: number) => Uint8Array {
  let draws = 0;
  return (size) => {
    draws++;
    assert.equal(size, 10);
    return new Uint8Array(
      bytes.length === 0
        ? Array.from({ length: size }, (_, i) => (draws * 37 + i * 11) & 0xff)
        : bytes,
    );
  };
}

describe("createMessageIds()", () => {
  it("spells the time as the ULID spec's example does", () => {
    const next = createMessageIds(fixed(), () => 1469922850259);
    const id = next();
    assert.match(id, /^msg_01ARZ3NDEK[0-9A-HJKMNP-TV-Z]{16}$/);
    assert.equal(timeOf(id), 1469922850259);
  });

  it("turns the 80 random bits into the last 16 digits, most significant first", () => {
    assert.equal(
      createMessageIds(fixed(0, 0, 0, 0, 0, 0, 0, 0, 0, 0), () => 0)(),
      "msg_00000000000000000000000000",
    );
    assert.equal(
      createMessageIds(
        fixed(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe),
        () => 0,
      )(),
      "msg_0000000000ZZZZZZZZZZZZZZZY",
    );
    assert.equal(
      createMessageIds(
        fixed(0x08, 0x42, 0x10, 0x84, 0x21, 0x08, 0x42, 0x10, 0x84, 0x21),
        () => 0,
      )(),
      "msg_00000000001111111111111111",
    );
  });

  it("counts up within one millisecond, carrying, and draws afresh in the next", () => {
    let draws = 0;
    const random = (size: number): Uint8Array => {
      draws++;
      return new Uint8Array(size).fill(0xff).map((byte, i) => (i === size - 1 ? 0xfe : byte));
    };
    let time = 1_000;
    const next = createMessageIds(random, () => time);
    assert.equal(next(), "msg_00000000Z8ZZZZZZZZZZZZZZZY");
    assert.equal(next(), "msg_00000000Z8ZZZZZZZZZZZZZZZZ");
    assert.equal(
      next(),
      "msg_00000000Z90000000000000000",
      "the random part ran out: the next millisecond is borrowed",
    );
    assert.equal(draws, 1);
    time = 1_002;
    assert.equal(next(), "msg_00000000ZAZZZZZZZZZZZZZZZY");
    assert.equal(draws, 2);
  });

  it("never repeats or goes back in order, even when the clock goes back", () => {
    let time = 5_000_000;
    const next = createMessageIds(fixed(), () => time);
    const ids: string[] = [];
    for (let i = 0; i < 2000; i++) {
      if (i % 7 === 0) time += 1;
      if (i % 500 === 499) time -= 50;
      ids.push(next());
    }
    assert.deepEqual([...ids].sort(), ids);
    assert.equal(new Set(ids).size, ids.length);
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  encodeIsoTime,
  encodeJsonNumber,
  encodeJsonString,
  encodeThousandths,
  formatRecord,
  LineBuffer,
} from "../../lib/log/mod.ts";
import { createPrng } from "../_helpers/prng.ts";

const decoder = new TextDecoder();

/** What an encoder wrote, as text. */
function written(encode: (into: Uint8Array, at: number) => number): string {
  const into = new Uint8Array(4096).fill(0x21);
  const end = encode(into, 3);
  assert.equal(into[2], 0x21, "nothing written before `at`");
  assert.equal(into[end], 0x21, "nothing written past the end returned");
  return decoder.decode(into.subarray(3, end));
}

/** A value as the JSON format writes a field: `,"v":<value>` without its name. */
function fieldJson(value: unknown): string {
  const line = formatRecord({ level: "info", time: 0, msg: "", fields: { v: value } }, "json");
  return line.slice(line.indexOf(',"v":') + 5, -1);
}

describe("encodeJsonString", () => {
  it("writes what JSON.stringify writes, for printable ASCII, escapes, non-ASCII and lone surrogates", () => {
    const prng = createPrng(29);
    const alphabet = [
      "a",
      "Z",
      "0",
      " ",
      "~",
      '"',
      "\\",
      "\n",
      "\t",
      "\u0000",
      "\u001f",
      "\u007f",
      "é",
      "水",
      "😀",
      "\ud800",
      "\udfff",
      "/",
      ":",
    ];
    const cases = ["", "127.0.0.1", "::ffff:10.0.0.1", "a8cbd97a-1"];
    for (let n = 0; n < 2000; n++) {
      let text = "";
      const length = prng.int(12);
      for (let i = 0; i < length; i++) text += prng.pick(alphabet);
      cases.push(text);
    }
    for (const text of cases) {
      assert.equal(
        written((into, at) => encodeJsonString(text, into, at)),
        JSON.stringify(text),
        JSON.stringify(text),
      );
    }
  });
});

describe("encodeJsonNumber", () => {
  it("writes a number as the JSON format writes a field: whole numbers, thousandths, the rest and what is not finite", () => {
    const prng = createPrng(30);
    const values = [
      0,
      -0,
      1,
      9,
      10,
      99,
      100,
      4.636,
      0.5,
      0.05,
      0.001,
      0.1 + 0.2,
      1e21,
      1e-7,
      -3,
      -4.5,
      2 ** 53,
      2 ** 53 + 2,
      999_999_999_999.999,
      NaN,
      Infinity,
      -Infinity,
    ];
    for (let n = 0; n < 5000; n++) {
      values.push(
        prng.int(1_000_000_000),
        Math.round(prng.next() * 10 ** prng.int(12)) / 1000,
        prng.next() * 1000,
      );
    }
    for (const value of values) {
      assert.equal(
        written((into, at) => encodeJsonNumber(value, into, at)),
        fieldJson(value),
        String(value),
      );
    }
  });
});

describe("encodeIsoTime", () => {
  it("writes the time the JSON format writes, quoted, within a second and across seconds, past year 9999 too", () => {
    const prng = createPrng(31);
    const times = [
      0,
      999,
      1000,
      Date.UTC(2026, 10, 28, 23, 59, 59, 999),
      Date.UTC(2026, 10, 29),
      253_402_300_800_000,
      1.5,
      -1,
    ];
    let time = Date.UTC(2026, 0, 1);
    for (let n = 0; n < 3000; n++) {
      time += prng.int(3) === 0 ? prng.int(5000) : prng.int(3);
      times.push(time);
    }
    for (const t of times) {
      assert.equal(
        written((into, at) => encodeIsoTime(t, into, at)),
        JSON.stringify(new Date(Math.trunc(t)).toISOString()),
        String(t),
      );
    }
  });

  it("throws on a time a Date cannot hold, as the JSON format does", () => {
    assert.throws(() => encodeIsoTime(Number.NaN, new Uint8Array(64), 0), RangeError);
  });
});

describe("LineBuffer", () => {
  const fields = (text: string) => ({
    maxBytes: () => text.length * 3,
    encode: (into: Uint8Array, at: number) =>
      at + new TextEncoder().encodeInto(text, into.subarray(at)).written,
  });

  it("keeps text lines and JSON lines in order, each with its newline, until they are taken", () => {
    const lines = new LineBuffer(64);
    lines.addText("one");
    lines.addJson("warn", Date.UTC(2026, 10, 28, 1, 2, 3, 45), fields('"two","n":2}'));
    lines.addText("trois é");
    assert.equal(
      lines.length,
      Buffer.byteLength(
        'one\n{"level":"warn","time":"2026-11-28T01:02:03.045Z","msg":"two","n":2}\ntrois é\n',
      ),
    );
    assert.equal(
      decoder.decode(lines.take()),
      'one\n{"level":"warn","time":"2026-11-28T01:02:03.045Z","msg":"two","n":2}\ntrois é\n',
    );
    assert.equal(lines.length, 0);
    assert.equal(lines.take().length, 0, "nothing more to take");
  });

  it("grows for more than its size, and never writes again into bytes it handed over", () => {
    const lines = new LineBuffer(16);
    const long = "x".repeat(100);
    lines.addText(long);
    lines.addText("y");
    const first = lines.take();
    assert.equal(decoder.decode(first), `${long}\ny\n`);
    lines.addText("z".repeat(120));
    assert.equal(decoder.decode(first), `${long}\ny\n`, "the bytes taken stay as they were");
    assert.equal(decoder.decode(lines.take()), `${"z".repeat(120)}\n`);
  });
});

describe("encodeThousandths", () => {
  it("writes thousandths / 1000 as the JSON format writes that number", () => {
    const prng = createPrng(32);
    const values = [
      0,
      -0,
      1,
      10,
      100,
      1000,
      1001,
      1010,
      1100,
      4636,
      999_999_999_999_999,
      1e15,
      2 ** 53,
      -5,
      0.5,
      NaN,
      Infinity,
    ];
    for (let n = 0; n < 5000; n++) {
      values.push(prng.int(2 ** 31), Math.round(prng.next() * 10 ** prng.int(16)));
    }
    for (const value of values) {
      assert.equal(
        written((into, at) => encodeThousandths(value, into, at)),
        fieldJson(value / 1000),
        String(value),
      );
    }
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  compileFilter,
  MatchCursor,
  rowNumberAt,
  type RowNumberColumn,
  rowNumberReader,
  rowsBelow,
  rowWithNumber,
} from "../../lib/columnar/mod.ts";
import { bindFilter, evaluateFilter, type FilterSchema, parseFilter } from "../../lib/odata/mod.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";

/** A segmented column over `length` rows with random segment sizes (some empty) and gaps, and each row's number written out. */
function segmented(prng: Prng, length: number): { column: RowNumberColumn; numbers: number[] } {
  const starts: number[] = [];
  const offsets: number[] = [];
  const numbers: number[] = [];
  let row = 0;
  let next = prng.int(5);
  while (row < length || starts.length === 0) {
    const size = prng.int(4) === 0 ? 0 : Math.min(length - row, 1 + prng.int(12));
    starts.push(row);
    offsets.push(next - row + 1);
    for (let i = 0; i < size; i++) numbers.push(next + 1 + i);
    row += size;
    next += size + (prng.int(3) === 0 ? 0 : prng.int(20));
    if (size === 0 && row >= length) break;
  }
  return {
    column: {
      kind: "rownumber",
      offset: 1,
      segments: { starts: Uint32Array.from(starts), offsets: Float64Array.from(offsets) },
    },
    numbers,
  };
}

function allRows(compiled: ReturnType<typeof compileFilter>): number[] {
  const out: number[] = [];
  const cursor = new MatchCursor(compiled);
  const buffer = new Uint32Array(64);
  for (;;) {
    const n = cursor.next(buffer);
    for (let i = 0; i < n; i++) out.push(buffer[i]!);
    if (n < buffer.length) return out;
  }
}

describe("row numbers with segments", () => {
  const seeds = [1, 7, 42, 2024, 31337];
  for (const seed of seeds) {
    it(`reads each row's number, and the rows below each number, as written out (seed ${seed})`, () => {
      const prng = createPrng(seed);
      const length = 1 + prng.int(80);
      const { column, numbers } = segmented(prng, length);
      assert.equal(numbers.length, length);
      const read = rowNumberReader(column);
      // Ascending, then at random: the reader's remembered segment must not mislead it.
      for (let row = 0; row < length; row++) assert.equal(read(row), numbers[row], `row ${row}`);
      for (let k = 0; k < 200; k++) {
        const row = prng.int(length);
        assert.equal(read(row), numbers[row]);
        assert.equal(rowNumberAt(column, row), numbers[row]);
      }
      const last = numbers[length - 1]!;
      for (let value = -2; value <= last + 3; value += 0.5) {
        assert.equal(
          rowsBelow(column, length, value),
          numbers.filter((n) => n < value).length,
          `below ${value}`,
        );
        assert.equal(
          rowWithNumber(column, length, value),
          numbers.indexOf(value),
          `row of ${value}`,
        );
      }
    });

    it(`selects by Id comparisons and 'in' the rows a plain evaluation selects (seed ${seed})`, () => {
      const prng = createPrng(seed ^ 0x5eed);
      const length = 1 + prng.int(80);
      const { column, numbers } = segmented(prng, length);
      const schema: FilterSchema = new Map([["Id", { type: "integer" }]]);
      const table = { length, column: (name: string) => (name === "Id" ? column : undefined) };
      const last = numbers[length - 1]!;
      for (let k = 0; k < 60; k++) {
        const value = prng.int(last + 4) - 2 + (prng.int(4) === 0 ? 0.5 : 0);
        const op = prng.pick(["eq", "ne", "lt", "le", "gt", "ge"] as const);
        const text = prng.int(5) === 0
          ? `Id in (${value}, ${prng.int(last + 2)}, null)`
          : prng.int(7) === 0
          ? `round(Id) ${op} ${value}`
          : `Id ${op} ${value}`;
        const bound = bindFilter(parseFilter(text), schema);
        const expected = numbers.flatMap((n, row) => (evaluateFilter(bound, () => n) ? [row] : []));
        assert.deepEqual(allRows(compileFilter(bound, table)), expected, text);
      }
    });
  }

  it("reads a column without segments as row plus offset", () => {
    const column: RowNumberColumn = { kind: "rownumber", offset: 1 };
    assert.equal(rowNumberAt(column, 9), 10);
    assert.equal(rowsBelow(column, 5, 3), 2);
    assert.equal(rowsBelow(column, 5, 100), 5);
    assert.equal(rowWithNumber(column, 5, 5), 4);
    assert.equal(rowWithNumber(column, 5, 6), -1);
    assert.equal(rowWithNumber(column, 5, 2.5), -1);
  });
});

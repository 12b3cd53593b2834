import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  type Column,
  type ColumnTable,
  type CompiledFilter,
  compileFilter,
  countMatches,
  FULL_BATCH,
  MatchCursor,
  type PostingIndex,
} from "../../lib/columnar/mod.ts";
import { bindFilter, type FilterSchema, parseFilter } from "../../lib/odata/mod.ts";
import type { Kernel } from "../../lib/columnar/_kernels.ts";
import { createPrng } from "../_helpers/prng.ts";

const LENGTH = 30_000;
const SEED = 0xc0450001;

/** A table with a random number column, a dictionary column with an index, and a row number. */
function buildTable(): ColumnTable {
  const prng = createPrng(SEED);
  const values = Float64Array.from({ length: LENGTH }, () => prng.next());
  const codes = Uint8Array.from({ length: LENGTH }, () => (prng.int(50) === 0 ? 1 : 2));
  const rare: number[] = [];
  const common: number[] = [];
  codes.forEach((code, row) => (code === 1 ? rare : common).push(row));
  const index: PostingIndex = {
    starts: Uint32Array.of(0, 0, rare.length, LENGTH),
    rows: Uint32Array.from([...rare, ...common]),
  };
  const columns = new Map<string, Column>([
    ["V", { kind: "number", values }],
    ["K", { kind: "dict", codes, values: [null, "rare", "common"], index }],
    ["Id", { kind: "rownumber", offset: 1 }],
  ]);
  return { length: LENGTH, column: (name) => columns.get(name) };
}

const TABLE = buildTable();
const SCHEMA: FilterSchema = new Map([
  ["V", { type: "number" }],
  ["K", { type: "string" }],
  ["Id", { type: "integer" }],
]);

function compile(text: string): CompiledFilter {
  return compileFilter(bindFilter(parseFilter(text), SCHEMA), TABLE);
}

/** Every matching row in one call. */
function allRows(filter: CompiledFilter, from = 0): number[] {
  const out = new Uint32Array(LENGTH);
  return [...out.subarray(0, new MatchCursor(filter, { from }).next(out))];
}

/** Every matching row, `max` at a time. */
function pagedRows(filter: CompiledFilter, max: number): number[] {
  const cursor = new MatchCursor(filter);
  const out = new Uint32Array(max);
  const rows: number[] = [];
  for (;;) {
    const n = cursor.next(out, max);
    rows.push(...out.subarray(0, n));
    if (n < max) return rows;
  }
}

/** The filters the tests walk: a scan, index candidates (rows), and row ranges. */
const FILTERS = [
  { name: "a scan", text: "V lt 0.3" },
  { name: "index rows", text: "K eq 'rare'" },
  { name: "index rows and a scan", text: "K eq 'rare' and V gt 0.5" },
  { name: "row ranges", text: "Id gt 1000 and Id le 25000 and V ge 0.5" },
  { name: "no rows", text: "V gt 2" },
] as const;

describe("MatchCursor", () => {
  for (const f of FILTERS) {
    it(`pages through ${f.name} with small pages exactly as with one call`, () => {
      const filter = compile(f.text);
      const all = allRows(filter);
      for (const max of [1, 7, 255, 256, 1000]) {
        assert.deepEqual(pagedRows(filter, max), all, `max ${max}`);
      }
    });
  }

  it("gives rows in ascending order", () => {
    const rows = allRows(compile("V lt 0.5 or K eq 'rare'"));
    assert.ok(rows.length > 1000);
    for (let i = 1; i < rows.length; i++) assert.ok(rows[i - 1]! < rows[i]!);
  });

  it("writes at most out.length rows by default", () => {
    const cursor = new MatchCursor(compile("V lt 0.5"));
    const out = new Uint32Array(10);
    assert.equal(cursor.next(out), 10);
  });

  it("returns fewer rows than asked only at the end, and then none", () => {
    const filter = compile("K eq 'rare'");
    const total = allRows(filter).length;
    const cursor = new MatchCursor(filter);
    const out = new Uint32Array(LENGTH);
    assert.equal(cursor.next(out, total - 1), total - 1);
    assert.equal(cursor.next(out, 5), 1);
    assert.equal(cursor.next(out, 5), 0);
  });

  for (const f of FILTERS) {
    it(`starts at 'from' for ${f.name}`, () => {
      const filter = compile(f.text);
      const all = allRows(filter);
      for (const from of [0, 1, 999, 1000, 12_345, LENGTH - 1, LENGTH, LENGTH + 10]) {
        assert.deepEqual(allRows(filter, from), all.filter((r) => r >= from), `from ${from}`);
      }
    });

    it(`skips forward with seek() for ${f.name}`, () => {
      const filter = compile(f.text);
      const all = allRows(filter);
      const cursor = new MatchCursor(filter);
      const out = new Uint32Array(LENGTH);
      const first = cursor.next(out, 3);
      assert.deepEqual([...out.subarray(0, first)], all.slice(0, 3));
      cursor.seek(20_000);
      const n = cursor.next(out);
      assert.deepEqual([...out.subarray(0, n)], all.filter((r) => r >= 20_000));
    });

    it(`ignores a backward seek() for ${f.name}`, () => {
      const filter = compile(f.text);
      const all = allRows(filter);
      const cursor = new MatchCursor(filter, { from: 10_000 });
      const out = new Uint32Array(LENGTH);
      const first = cursor.next(out, 2);
      cursor.seek(0);
      cursor.seek(5_000);
      const n = cursor.next(out, LENGTH);
      assert.deepEqual([...out.subarray(0, n)], all.filter((r) => r >= 10_000).slice(first));
    });
  }

  it("keeps buffered rows at or after the seek target", () => {
    const filter = compile("V lt 0.5");
    const all = allRows(filter);
    const cursor = new MatchCursor(filter);
    const out = new Uint32Array(LENGTH);
    cursor.next(out, 1);
    // The first batch is buffered; seek into its middle.
    const target = all[5]! + 1;
    cursor.seek(target);
    assert.equal(cursor.next(out, 1), 1);
    assert.equal(out[0], all[6]);
  });

  it("seeks past the end", () => {
    const cursor = new MatchCursor(compile("K eq 'rare'"));
    cursor.seek(LENGTH + 1);
    assert.equal(cursor.next(new Uint32Array(10)), 0);
  });

  it("calls checkpoint before each batch", () => {
    let calls = 0;
    const cursor = new MatchCursor(compile("V lt 0.5"), { checkpoint: () => calls++ });
    const out = new Uint32Array(LENGTH);
    cursor.next(out, 1);
    assert.equal(calls, 1);
    cursor.next(out);
    // Batches of 256, 512, ... 8192 rows, then 8192 at a time.
    assert.equal(calls, 8);
  });

  it("calls checkpoint for candidate rows too", () => {
    let calls = 0;
    countMatches(compile("K eq 'rare'"), { checkpoint: () => calls++ });
    assert.ok(calls >= 1);
  });

  it("passes on an error thrown by checkpoint", () => {
    const timeout = new Error("query timed out");
    let calls = 0;
    const cursor = new MatchCursor(compile("V lt 0.5"), {
      checkpoint: () => {
        if (++calls === 3) throw timeout;
      },
    });
    const out = new Uint32Array(LENGTH);
    assert.equal(cursor.next(out, 10), 10);
    assert.throws(() => cursor.next(out), timeout);
  });

  it("passes on an error thrown by checkpoint while walking candidate rows", () => {
    const stop = new RangeError("stop");
    assert.throws(
      () => {
        countMatches(compile("K eq 'rare'"), {
          checkpoint: () => {
            throw stop;
          },
        });
      },
      stop,
    );
  });

  it("starts with small batches so a short page reads few rows", () => {
    const sizes: number[] = [];
    const kernel: Kernel = (sel, start, n, out) => {
      sizes.push(n);
      for (let i = 0; i < n; i++) out[i] = sel === null ? start + i : sel[i]!;
      return n;
    };
    const cursor = new MatchCursor({ length: 100_000, candidates: undefined, kernel });
    const out = new Uint32Array(100_000);
    assert.equal(cursor.next(out, 10), 10);
    assert.deepEqual(sizes, [256]);
    assert.equal(cursor.next(out), 100_000 - 10);
    assert.deepEqual(sizes.slice(0, 7), [256, 512, 1024, 2048, 4096, 8192, 8192]);
    assert.equal(sizes.reduce((a, b) => a + b, 0), 100_000);
  });

  it("writes full batches into a scratch buffer, finding the same rows", () => {
    const scratch = new Uint32Array(FULL_BATCH);
    for (const f of FILTERS) {
      const filter = compile(f.text);
      const cursor = new MatchCursor(filter, { scratch });
      const out = new Uint32Array(LENGTH);
      assert.deepEqual([...out.subarray(0, cursor.next(out))], allRows(filter), f.name);
    }
    const sizes: number[] = [];
    const kernel: Kernel = (sel, start, n, out) => {
      sizes.push(n);
      for (let i = 0; i < n; i++) out[i] = sel === null ? start + i : sel[i]!;
      return n;
    };
    const cursor = new MatchCursor({ length: 20_000, candidates: undefined, kernel }, { scratch });
    assert.equal(cursor.next(new Uint32Array(20_000)), 20_000);
    assert.deepEqual(sizes, [FULL_BATCH, FULL_BATCH, 20_000 - 2 * FULL_BATCH]);
  });

  it("refuses a scratch buffer shorter than a full batch", () => {
    assert.throws(
      () => new MatchCursor(compile("V lt 0.5"), { scratch: new Uint32Array(FULL_BATCH - 1) }),
      RangeError,
    );
  });

  it("walks only the candidate ranges", () => {
    const seen: number[] = [];
    const kernel: Kernel = (sel, start, n) => {
      for (let i = 0; i < n; i++) seen.push(sel === null ? start + i : sel[i]!);
      return 0;
    };
    const filter: CompiledFilter = {
      length: 100,
      candidates: { kind: "ranges", ranges: Uint32Array.of(3, 5, 10, 12, 50, 50, 98, 100) },
      kernel,
    };
    assert.equal(countMatches(filter), 0);
    assert.deepEqual(seen, [3, 4, 10, 11, 98, 99]);
  });

  it("walks only the candidate rows, after 'from'", () => {
    const seen: number[] = [];
    const kernel: Kernel = (sel, _start, n, out) => {
      for (let i = 0; i < n; i++) {
        seen.push(sel![i]!);
        out[i] = sel![i]!;
      }
      return n;
    };
    const filter: CompiledFilter = {
      length: 100,
      candidates: { kind: "rows", rows: Uint32Array.of(2, 7, 40, 41, 99) },
      kernel,
    };
    assert.equal(countMatches(filter, { from: 8 }), 3);
    assert.deepEqual(seen, [40, 41, 99]);
  });
});

describe("countMatches()", () => {
  for (const f of FILTERS) {
    it(`counts the rows of ${f.name}`, () => {
      const filter = compile(f.text);
      assert.equal(countMatches(filter), allRows(filter).length);
    });
  }

  it("counts from a row", () => {
    const filter = compile("V lt 0.5");
    assert.equal(
      countMatches(filter, { from: 15_000 }),
      allRows(filter).filter((r) => r >= 15_000).length,
    );
  });

  it("counts every row of a table without a filter", () => {
    assert.equal(countMatches(compileFilter(undefined, TABLE)), LENGTH);
  });

  it("counts a multiple of the batch size exactly", () => {
    const table: ColumnTable = { length: 8192 * 3, column: () => undefined };
    assert.equal(countMatches(compileFilter(undefined, table)), 8192 * 3);
  });
});

import type { Column, OrderKey, Scalar } from "../odata/mod.ts";
import { WaterError } from "./errors.ts";
import type { CollectionSchema, FieldLevel } from "./fields.ts";
import type { WaterStore } from "./store.ts";

/**
 * Ranks of each row of a level by one field: equal values have equal ranks,
 * nulls rank first (OData: null sorts before any value in ascending order).
 * Built once per field and level, in O(rows) for dictionary columns (their
 * distinct values are sorted, not their rows) and O(rows log rows) for
 * numbers, then kept: paging through an order compares ranks only.
 */
export class RankCache {
  readonly #ranks = new Map<string, Uint32Array>();
  readonly #max: number;

  /**
   * @param max fields kept at once (each costs 4 bytes per row of its level)
   */
  constructor(max = 8) {
    this.#max = max;
  }

  /**
   * The ranks of a field seen from a level's rows.
   * @param store the store
   * @param key the field's storage key, e.g. `location.MonitoringLocationName`
   * @param level the rows'
   * @returns one rank per row
   */
  ranks(store: WaterStore, key: string, level: FieldLevel): Uint32Array {
    const cacheKey = `${level}:${key}`;
    let ranks = this.#ranks.get(cacheKey);
    if (ranks === undefined) {
      ranks = rowRanks(store.columnAt(key, level)!, store.lengthOf(level));
      if (this.#ranks.size >= this.#max) this.#ranks.delete(this.#ranks.keys().next().value!);
      this.#ranks.set(cacheKey, ranks);
    }
    return ranks;
  }
}

/**
 * Orders matching rows by `$orderby` keys, then by `Id` (so that the order is
 * total and paging exact), and takes a page: the rows after the `$skiptoken`
 * row in that order, past `skip` of them, `top` at most. A top-k (a bounded
 * heap), not a sort of every match, unless the page is most of them.
 * @param store the store
 * @param collection the collection
 * @param keys the order
 * @param rows the matching rows of the collection's level
 * @param after the row of the `$skiptoken`, if any
 * @param skip rows to pass over
 * @param top the page size; `Infinity` for every row (a CSV stream)
 * @param cache where ranks are kept
 * @param idOf the id order of two rows of the level (rows for locations and observations, UUIDs for datasets)
 * @returns the page's rows in order, and whether more follow
 * @throws {WaterError} `ERR_WATER_INVALID_ORDER` (400) for a field the collection does not show or one with several values
 */
export function orderRows(
  store: WaterStore,
  collection: CollectionSchema,
  keys: readonly OrderKey[],
  rows: ArrayLike<number>,
  after: number | undefined,
  skip: number,
  top: number,
  cache: RankCache,
  idOf: (a: number, b: number) => number,
): { rows: number[]; more: boolean } {
  const level = collection.level;
  const ranked = keys.map((key) => {
    const field = collection.select.find((candidate) => candidate.name === key.name);
    if (field === undefined) {
      throw new WaterError("ERR_WATER_INVALID_ORDER", `Cannot order ${collection.name} by ${key.name}: order by one of its fields: ${collection.select.map((f) => f.name).join(", ")}`, { target: "$orderby" });
    }
    if (field.source.multiValued === true) {
      throw new WaterError("ERR_WATER_INVALID_ORDER", `Cannot order by ${key.name}: it holds several values`, { target: "$orderby" });
    }
    return { ranks: cache.ranks(store, field.source.key, level), sign: key.descending ? -1 : 1 };
  });
  const compare = (a: number, b: number): number => {
    for (const { ranks, sign } of ranked) {
      const difference = ranks[a]! - ranks[b]!;
      if (difference !== 0) return sign * difference;
    }
    return idOf(a, b);
  };
  const wanted = skip + top;
  const candidates: number[] = [];
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i]!;
    if (after === undefined || compare(row, after) > 0) candidates.push(row);
  }
  const more = candidates.length > wanted;
  let page: number[];
  if (!Number.isFinite(wanted) || wanted * 4 >= candidates.length) {
    page = candidates.sort(compare).slice(0, wanted);
  } else {
    page = smallest(candidates, wanted, compare);
  }
  return { rows: page.slice(skip), more };
}

/** The `k` smallest rows in order, through a bounded max-heap: O(n log k). */
function smallest(rows: readonly number[], k: number, compare: (a: number, b: number) => number): number[] {
  const heap: number[] = [];
  const up = (i: number): void => {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (compare(heap[i]!, heap[parent]!) <= 0) return;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  const down = (i: number): void => {
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let largest = i;
      if (left < heap.length && compare(heap[left]!, heap[largest]!) > 0) largest = left;
      if (right < heap.length && compare(heap[right]!, heap[largest]!) > 0) largest = right;
      if (largest === i) return;
      [heap[i], heap[largest]] = [heap[largest]!, heap[i]!];
      i = largest;
    }
  };
  for (const row of rows) {
    if (heap.length < k) {
      heap.push(row);
      up(heap.length - 1);
    } else if (compare(row, heap[0]!) < 0) {
      heap[0] = row;
      down(0);
    }
  }
  return heap.sort(compare);
}

/** Ranks of a column over `length` rows. */
function rowRanks(column: Column, length: number): Uint32Array {
  const out = new Uint32Array(length);
  switch (column.kind) {
    case "rownumber":
      for (let row = 0; row < length; row++) out[row] = row;
      return out;
    case "dict": {
      const byCode = denseRanks(column.values.length, (a, b) => compareScalars(column.values[a] ?? null, column.values[b] ?? null));
      for (let row = 0; row < length; row++) out[row] = byCode[column.codes[row]!]!;
      return out;
    }
    case "number": {
      const values = column.values;
      const byRow = denseRanks(values.length, (a, b) => compareScalars(Number.isNaN(values[a]!) ? null : values[a]!, Number.isNaN(values[b]!) ? null : values[b]!));
      out.set(byRow.subarray(0, length));
      return out;
    }
    case "values": {
      const byRow = denseRanks(column.values.length, (a, b) => compareScalars(scalarOf(column.values[a]), scalarOf(column.values[b])));
      out.set(byRow.subarray(0, length));
      return out;
    }
    case "group": {
      const groups = column.starts.length - 1;
      const inner = rowRanks(column.column, groups);
      for (let group = 0; group < groups; group++) out.fill(inner[group]!, column.starts[group]!, column.starts[group + 1]!);
      return out;
    }
  }
}

/** Dense ranks of `n` entries in the order of `compare`: equal entries share a rank. */
function denseRanks(n: number, compare: (a: number, b: number) => number): Uint32Array {
  const order = Array.from({ length: n }, (_, i) => i).sort(compare);
  const ranks = new Uint32Array(n);
  let rank = 0;
  for (let i = 0; i < n; i++) {
    if (i > 0 && compare(order[i - 1]!, order[i]!) !== 0) rank++;
    ranks[order[i]!] = rank;
  }
  return ranks;
}

function scalarOf(value: Scalar | readonly Scalar[] | undefined): Scalar {
  return value === undefined || Array.isArray(value) ? null : value as Scalar;
}

/** Null first; numbers by value; text by code units (as OData compares strings); booleans false first. */
function compareScalars(a: Scalar, b: Scalar): number {
  if (a === b) return 0;
  if (a === null) return -1;
  if (b === null) return 1;
  if (typeof a === "number" && typeof b === "number") return a - b;
  const x = String(a);
  const y = String(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

import type { Column } from "../../columnar/mod.ts";
import type { OrderKey, Scalar } from "../../odata/mod.ts";
import { WaterError } from "../errors.ts";
import type { CollectionSchema, FieldLevel } from "../fields.ts";
import type { WaterStore } from "../store/store.ts";

/**
 * Ranks of each row of a level by one field: equal values have equal ranks,
 * nulls rank first (OData: null sorts before any value in ascending order).
 * Built once per field and level, in O(rows) for dictionary columns (their
 * distinct values are sorted, not their rows) and O(rows log rows) for
 * numbers, then kept: paging through an order compares ranks only.
 */
export class RankCache {
  readonly #ranks = new Map<string, Uint32Array>();
  /** Every row of a level in an order, by level and order: a page walks it from the token's place. */
  readonly #orders = new Map<string, Uint32Array>();
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

  /**
   * Every row of a level sorted by an order (built once per order, then kept).
   * @param key the order's key, e.g. `observation|ResultValue desc`
   * @param length rows of the level
   * @param compare the order
   * @returns the rows in order
   */
  order(key: string, length: number, compare: (a: number, b: number) => number): Uint32Array {
    let order = this.#orders.get(key);
    if (order === undefined) {
      order = new Uint32Array(length);
      for (let row = 0; row < length; row++) order[row] = row;
      order.sort(compare);
      if (this.#orders.size >= Math.max(1, this.#max >> 1)) {
        this.#orders.delete(this.#orders.keys().next().value!);
      }
      this.#orders.set(key, order);
    }
    return order;
  }
}

/**
 * Orders matching rows by `$orderby` keys, then by `Id` (so that the order is
 * total and paging exact), and takes a page: the rows after the `$skiptoken`
 * row in that order, past `skip` of them, `top` at most. Every row of the
 * level in that order is kept once built: a page walks it from the token's
 * place (found by binary search), taking the matching rows, so an unfiltered
 * or a broad query costs its page, not its matches.
 * @param store the store
 * @param collection the collection
 * @param keys the order
 * @param rows the matching rows of the collection's level; undefined for all (no filter)
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
  rows: ArrayLike<number> | undefined,
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
      throw new WaterError(
        "ERR_WATER_INVALID_ORDER",
        `Cannot order ${collection.name} by ${key.name}: order by one of its fields: ${
          collection.select.map((f) => f.name).join(", ")
        }`,
        { target: "$orderby" },
      );
    }
    if (field.source.multiValued === true) {
      throw new WaterError(
        "ERR_WATER_INVALID_ORDER",
        `Cannot order by ${key.name}: it holds several values`,
        { target: "$orderby" },
      );
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
  const length = store.lengthOf(level);
  const order = cache.order(
    `${level}|${keys.map((key) => `${key.name}${key.descending ? " desc" : ""}`).join(",")}`,
    length,
    compare,
  );
  // The first place after the token's row: a binary search, the order being sorted by `compare`.
  let start = 0;
  if (after !== undefined) {
    let high = length;
    while (start < high) {
      const middle = (start + high) >>> 1;
      if (compare(order[middle]!, after) <= 0) start = middle + 1;
      else high = middle;
    }
  }
  let matches: Uint8Array | undefined;
  if (rows !== undefined) {
    matches = new Uint8Array(length);
    for (let i = 0; i < rows.length; i++) matches[rows[i]!] = 1;
  }
  const wanted = skip + top;
  const page: number[] = [];
  let more = false;
  for (let at = start; at < length; at++) {
    const row = order[at]!;
    if (matches !== undefined && matches[row] !== 1) continue;
    if (page.length === wanted) {
      more = true;
      break;
    }
    page.push(row);
  }
  return { rows: page.slice(skip), more };
}

/** Ranks of a column over `length` rows. */
function rowRanks(column: Column, length: number): Uint32Array {
  const out = new Uint32Array(length);
  switch (column.kind) {
    case "rownumber":
      for (let row = 0; row < length; row++) out[row] = row;
      return out;
    case "dict": {
      const byCode = denseRanks(
        column.values.length,
        (a, b) => compareScalars(column.values[a] ?? null, column.values[b] ?? null),
      );
      for (let row = 0; row < length; row++) out[row] = byCode[column.codes[row]!]!;
      return out;
    }
    case "number": {
      const values = column.values;
      const byRow = denseRanks(
        values.length,
        (a, b) =>
          compareScalars(
            Number.isNaN(values[a]!) ? null : values[a]!,
            Number.isNaN(values[b]!) ? null : values[b]!,
          ),
      );
      out.set(byRow.subarray(0, length));
      return out;
    }
    case "values": {
      const byRow = denseRanks(
        column.values.length,
        (a, b) => compareScalars(scalarOf(column.values[a]), scalarOf(column.values[b])),
      );
      out.set(byRow.subarray(0, length));
      return out;
    }
    case "group": {
      const groups = column.starts.length - 1;
      const inner = rowRanks(column.column, groups);
      for (let group = 0; group < groups; group++) {
        out.fill(inner[group]!, column.starts[group]!, column.starts[group + 1]!);
      }
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

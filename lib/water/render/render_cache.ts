import type { CollectionSchema } from "../fields.ts";
import { createRowWriter, type RowWriter, selectFields } from "./render_rows.ts";
import type { WaterStore } from "../store/store.ts";

/**
 * A bounded cache of rendered rows: the UTF-8 JSON of one row for one field
 * selection, as a range of a block rendered together with its neighbours.
 * Held bytes are counted per row; a block stays in memory while any of its
 * rows is cached, so memory can exceed the budget by the unheld rest of
 * partly evicted blocks. A store never changes, and a cache serves one store
 * (a reloaded store gets a new cache), so an entry never goes stale; the oldest entries are dropped when the cache holds more than
 * its byte budget (first in, first out: a hit costs one lookup). Pages that overlap earlier ones (the same
 * location's latest rows, a dashboard's refresh) then cost a copy per row
 * instead of rendering every field again.
 */
/** A rendered row: bytes `start .. end - 1` of a block rendered with its neighbours. */
export interface RenderedRow {
  readonly block: Uint8Array;
  readonly start: number;
  readonly end: number;
}

/**
 * What an entry costs beyond its bytes (the map slot and the record), counted
 * against the budget so that tiny rows cannot fill memory with entries.
 */
export const ENTRY_OVERHEAD = 96;

export class RenderCache {
  readonly #maxBytes: number;
  readonly #entries = new Map<number, RenderedRow>();
  #bytes = 0;
  /**
   * Where eviction goes on: a Map iterator walks entries in insertion order
   * and sees later ones, and all before it have been dropped, so the next it
   * gives is the oldest. A new iterator a call would first step over every
   * dropped entry the map has not compacted yet: 10,000-row pages of new
   * rows through a full cache took some 200 ms each instead of 15.
   */
  #oldest: Iterator<[number, RenderedRow]> | undefined;

  /**
   * Creates a cache.
   * @param maxBytes the byte budget; 0 keeps nothing
   * @throws {RangeError} when the budget is negative or not finite
   */
  constructor(maxBytes: number) {
    if (!Number.isFinite(maxBytes) || maxBytes < 0) {
      throw new RangeError(
        `Cannot create a render cache: the budget must be >= 0: current value is ${maxBytes}`,
      );
    }
    this.#maxBytes = maxBytes;
  }

  /** The byte budget; 0 when the cache keeps nothing. */
  get maxBytes(): number {
    return this.#maxBytes;
  }

  /** Bytes held, each entry's overhead included. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Finds a rendered row.
   * @param key the row's key (see {@linkcode renderKey})
   * @returns where its bytes are, or undefined
   */
  get(key: number): RenderedRow | undefined {
    return this.#entries.get(key);
  }

  /** Drops every entry. */
  clear(): void {
    this.#entries.clear();
    this.#bytes = 0;
    this.#oldest = undefined;
  }

  /**
   * Keeps a rendered row, dropping the oldest ones beyond the budget.
   * @param key the row's key
   * @param row where its bytes are
   */
  set(key: number, row: RenderedRow): void {
    const size = sizeOf(row);
    if (size > this.#maxBytes) return;
    const old = this.#entries.get(key);
    if (old !== undefined) {
      this.#entries.delete(key);
      this.#bytes -= sizeOf(old);
    }
    this.#entries.set(key, row);
    this.#bytes += size;
    while (this.#bytes > this.#maxBytes) {
      this.#oldest ??= this.#entries.entries();
      const next = this.#oldest.next();
      if (next.done === true) {
        // Not expected (the entry just set lies ahead), but an iterator stays done: start again.
        this.#oldest = undefined;
        continue;
      }
      const [oldest, value] = next.value;
      this.#entries.delete(oldest);
      this.#bytes -= sizeOf(value);
    }
  }
}

function sizeOf(row: RenderedRow): number {
  return row.end - row.start + ENTRY_OVERHEAD;
}

/** Selections tell their rows apart in the key; rows take the low 32 bits. */
const ROW_SPACE = 2 ** 32;

/** Selection numbers stay below this, so that keys stay exact integers. */
export const MAX_SELECTIONS = 2 ** 20;

/**
 * The cache key of a row rendered for a selection.
 * @param selection the selection's number (below {@linkcode MAX_SELECTIONS})
 * @param row the row
 * @returns the key
 */
export function renderKey(selection: number, row: number): number {
  return selection * ROW_SPACE + row;
}

/** Options of {@linkcode RowWriterCache}. */
export interface RowWriterCacheOptions {
  /**
   * Selection numbers to hand out before the render cache starts over.
   * @default {MAX_SELECTIONS}
   */
  maxSelections?: number;
  /**
   * Writers kept; the oldest are dropped beyond this.
   * @default {1024}
   */
  maxWriters?: number;
}

/**
 * Row writers by collection and `$select`, each with the number its rows
 * are cached under in a {@linkcode RenderCache}. A number is never handed
 * out twice while rows rendered under it may still be cached: when the
 * numbers run out, the render cache is cleared and numbering starts over.
 */
export class RowWriterCache {
  readonly #store: WaterStore;
  readonly #cache: RenderCache;
  readonly #maxSelections: number;
  readonly #maxWriters: number;
  readonly #writers = new Map<string, { writer: RowWriter; id: number }>();
  #next = 0;

  /**
   * Creates an empty registry.
   * @param store the store the writers read
   * @param cache the render cache the numbers key
   * @param options limits
   */
  constructor(store: WaterStore, cache: RenderCache, options: RowWriterCacheOptions = {}) {
    this.#store = store;
    this.#cache = cache;
    this.#maxSelections = Math.min(options.maxSelections ?? MAX_SELECTIONS, MAX_SELECTIONS);
    this.#maxWriters = options.maxWriters ?? 1024;
  }

  /**
   * The writer of a selection, made on first use.
   * @param collection the collection
   * @param select the `$select` names, or undefined for all
   * @returns the writer and its selection number
   * @throws {ODataError} for an unknown field (see `selectFields`)
   */
  get(
    collection: CollectionSchema,
    select: readonly string[] | undefined,
  ): { writer: RowWriter; id: number } {
    const key = `${collection.name}:${select?.join(",") ?? "*"}`;
    let found = this.#writers.get(key);
    if (found === undefined) {
      const fields = selectFields(collection, select);
      if (this.#writers.size >= this.#maxWriters) {
        this.#writers.delete(this.#writers.keys().next().value!);
      }
      if (this.#next === this.#maxSelections) {
        this.#cache.clear();
        this.#writers.clear();
        this.#next = 0;
      }
      found = { writer: createRowWriter(this.#store, collection, fields), id: this.#next++ };
      this.#writers.set(key, found);
    }
    return found;
  }
}

import {
  type CompiledFilter,
  compileFilter,
  countMatches,
  MatchCursor,
} from "../../columnar/mod.ts";
import {
  bindFilter,
  type BoundFilter,
  type BoundValue,
  type FilterSchema,
  ODataError,
  type OrderKey,
  parseFilter,
} from "../../odata/mod.ts";
import { WaterError } from "../errors.ts";
import type { CollectionSchema, FieldLevel } from "../fields.ts";
import { orderRows, type RankCache } from "./order_rows.ts";
import type { RowLevel, WaterStore } from "../store/store.ts";

const DEPTH: Readonly<Record<FieldLevel, number>> = { dataset: 0, location: 1, observation: 2 };
const schemas = new WeakMap<CollectionSchema, FilterSchema>();

/**
 * The filter schema of a collection: its filterable names and their types.
 * @param collection the collection
 * @returns names to types
 */
export function filterSchemaOf(collection: CollectionSchema): FilterSchema {
  let schema = schemas.get(collection);
  if (schema === undefined) {
    schema = new Map(
      [...collection.filter].map(([name, field]) => [
        name,
        {
          type: field.source.type,
          ...(field.source.multiValued === true ? { multiValued: true } : {}),
        },
      ]),
    );
    schemas.set(collection, schema);
  }
  return schema;
}

/**
 * Parses and binds a `$filter` for a collection.
 * @param collection the collection
 * @param text the filter text
 * @returns the bound filter
 * @throws {FilterSyntaxError} or {ODataError} for a bad filter
 */
export function prepareFilter(collection: CollectionSchema, text: string): BoundFilter {
  return bindFilter(parseFilter(text), filterSchemaOf(collection));
}

/** One query against a collection. */
export interface CollectionQuery {
  readonly collection: CollectionSchema;
  readonly filter?: BoundFilter;
  /** Called between batches; throws to stop a query past its deadline. */
  readonly checkpoint?: () => void;
}

/** A page of results: indexes at the collection's level, in ascending id order. */
export interface PageResult {
  readonly rows: readonly number[];
  /** Whether rows follow the page. */
  readonly more: boolean;
}

/**
 * Finds one page of a collection's rows after a skip token. Conditions on
 * finer levels are existential: a location (or dataset) matches when one of
 * its observations (or locations) satisfies the filter.
 * @param store the store
 * @param query collection, filter and checkpoint
 * @param skipToken the id after `Id:` in `$skiptoken`, if any
 * @param top page size
 * @returns the page
 * @throws {ODataError} `ERR_ODATA_QUERY_OPTION` for a skip token that is not an id of the collection
 * @throws {WaterError} `ERR_WATER_TOKEN_GONE` for a token naming a row of a dataset replaced or removed since
 * @example
 * ```ts
 * const locations = COLLECTIONS.get("Locations")!;
 * const query = { collection: locations, filter: prepareFilter(locations, "RegionId eq 'hub.atlantic'") };
 * const { rows, more } = queryPage(store, query, undefined, 100);
 * ```
 */
export function queryPage(
  store: WaterStore,
  query: CollectionQuery,
  skipToken: string | undefined,
  top: number,
): PageResult {
  const level = query.collection.level;
  if (level === "dataset") {
    const matching = matchingDatasets(store, query)
      .map((d) => ({ d, id: store.datasets[d]!.id }))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const after = skipToken === undefined ? undefined : readUuidToken(skipToken);
    const rest = after === undefined ? matching : matching.filter((m) => m.id > after);
    return { rows: rest.slice(0, top).map((m) => m.d), more: rest.length > top };
  }
  const from = skipToken === undefined ? 0 : rowAfterToken(store, level, skipToken);
  const rows = level === "location"
    ? matchingLocations(store, query, from, top + 1)
    : matchingObservations(store, query, from, top + 1);
  return { rows: rows.slice(0, top), more: rows.length > top };
}

/**
 * A page of a collection in a `$orderby` order (see `orderRows`): every
 * matching row is ranked, and the page is the `top` after the `$skiptoken`
 * row in that order, past `skip` of them. `top` may be `Infinity` (a CSV stream).
 * @param store the store
 * @param query collection, filter and checkpoint
 * @param keys the order
 * @param skipToken the id after `Id:` in `$skiptoken`: the last row of the page before
 * @param skip rows to pass over
 * @param top the page size
 * @param ranks where the fields' ranks are kept
 * @returns the page's rows in order, and whether more follow
 */
export function orderedPage(
  store: WaterStore,
  query: CollectionQuery,
  keys: readonly OrderKey[],
  skipToken: string | undefined,
  skip: number,
  top: number,
  ranks: RankCache,
): PageResult {
  const level = query.collection.level;
  let rows: ArrayLike<number> | undefined;
  let after: number | undefined;
  let idOrder: (a: number, b: number) => number = (a, b) => a - b;
  if (level === "dataset") {
    rows = matchingDatasets(store, query);
    const ids = store.datasets.map((d) => d.id);
    idOrder = (a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : 0);
    if (skipToken !== undefined) {
      const id = readUuidToken(skipToken);
      const found = ids.indexOf(id);
      if (found === -1) {
        throw new ODataError(
          "ERR_ODATA_QUERY_OPTION",
          `Cannot use $skiptoken=Id:${skipToken}: no dataset has that id`,
          { target: "$skiptoken" },
        );
      }
      after = found;
    }
  } else {
    // Without a filter every row matches: the order is walked as it is.
    rows = query.filter === undefined
      ? undefined
      : level === "location"
      ? matchingLocations(store, query, 0, Infinity)
      : allObservations(store, query);
    // The token names the last row of the page before.
    if (skipToken !== undefined) {
      const id = readRowToken(skipToken);
      if (store.isRetiredId(level, id)) throw tokenGone(skipToken);
      after = store.rowOfId(level, id);
      if (after === -1) {
        throw new ODataError(
          "ERR_ODATA_QUERY_OPTION",
          `Cannot use $skiptoken=Id:${skipToken}: under an order, the token names a row of the previous page`,
          { target: "$skiptoken" },
        );
      }
    }
  }
  return orderRows(store, query.collection, keys, rows, after, skip, top, ranks, idOrder);
}

/** Every matching observation row, ascending. */
function allObservations(store: WaterStore, query: CollectionQuery): Uint32Array {
  let out = new Uint32Array(1 << 16);
  let size = 0;
  for (const batch of observationBatches(store, query, 0, 1 << 16)) {
    if (size + batch.length > out.length) {
      const bigger = new Uint32Array(Math.max(out.length * 2, size + batch.length));
      bigger.set(out.subarray(0, size));
      out = bigger;
    }
    out.set(batch, size);
    size += batch.length;
  }
  return out.subarray(0, size);
}

/**
 * Counts a collection's rows that match a filter.
 * @param store the store
 * @param query collection, filter and checkpoint
 * @returns the count
 */
export function queryCount(store: WaterStore, query: CollectionQuery): number {
  switch (query.collection.level) {
    case "dataset":
      return matchingDatasets(store, query).length;
    case "location":
      if (query.filter === undefined) return store.locationCount;
      return matchingLocations(store, query, 0, Infinity).length;
    case "observation": {
      if (query.filter === undefined) return store.observationCount;
      const compiled = compileAt(store, query, "observation");
      return countMatches(compiled, optionsOf(query, 0));
    }
  }
}

/**
 * Walks all matching observation rows from a start row, in batches, for streaming.
 * @param store the store
 * @param query collection, filter and checkpoint
 * @param from first row to consider
 * @param batch rows per batch
 * @yields ascending rows
 */
export function* observationBatches(
  store: WaterStore,
  query: CollectionQuery,
  from: number,
  batch: number,
): Generator<Uint32Array> {
  const cursor = new MatchCursor(compileAt(store, query, "observation"), optionsOf(query, from));
  for (;;) {
    const buffer = new Uint32Array(batch);
    const n = cursor.next(buffer);
    if (n > 0) yield buffer.subarray(0, n);
    if (n < batch) return;
  }
}

/**
 * A cursor over the matching observation rows, ascending, from the plan
 * cache: what an aggregation reads its rows from.
 * @param store the store
 * @param query collection, filter and checkpoint
 * @param scratch where the cursor's batches go, for a caller that reads every row (see `MatchCursorOptions`)
 * @returns the cursor
 */
export function observationCursor(
  store: WaterStore,
  query: CollectionQuery,
  scratch?: Uint32Array,
): MatchCursor {
  const options = optionsOf(query, 0);
  return new MatchCursor(
    compileAt(store, query, "observation"),
    scratch === undefined ? options : { ...options, scratch },
  );
}

/**
 * A cursor over the matching locations, ascending: what an aggregation of
 * `/Locations` reads its rows from. A condition on observations holds for a
 * location when one of its observations satisfies it, as for a page.
 * @param store the store
 * @param query collection (`/Locations`), filter and checkpoint
 * @returns the cursor
 */
export function locationCursor(
  store: WaterStore,
  query: CollectionQuery,
): ListCursor | MatchCursor {
  if (levelOf(query) !== "observation") {
    return new MatchCursor(compileAt(store, query, "location"), optionsOf(query, 0));
  }
  return new ListCursor(matchingLocations(store, query, 0, Infinity));
}

/**
 * Whether a query's filter reads the observations of a coarser collection's
 * rows (and so holds for a row when one of its observations satisfies it).
 * @param query collection and filter
 * @returns true when it does
 */
export function readsObservations(query: CollectionQuery): boolean {
  return query.collection.level !== "observation" && levelOf(query) === "observation";
}

/** A cursor over rows already found, ascending. */
export class ListCursor {
  readonly #rows: readonly number[];
  #at = 0;

  /** @param rows the rows, ascending */
  constructor(rows: readonly number[]) {
    this.#rows = rows;
  }

  /**
   * Writes the next rows.
   * @param out where the rows go
   * @param max most rows to write
   * @returns how many were written; fewer than `max` only at the end
   */
  next(out: Uint32Array, max: number = out.length): number {
    const n = Math.min(max, out.length, this.#rows.length - this.#at);
    for (let i = 0; i < n; i++) out[i] = this.#rows[this.#at + i]!;
    this.#at += n;
    return n;
  }
}

function optionsOf(
  query: CollectionQuery,
  from: number,
): { from: number; checkpoint?: () => void } {
  return query.checkpoint === undefined ? { from } : { from, checkpoint: query.checkpoint };
}

function matchingObservations(
  store: WaterStore,
  query: CollectionQuery,
  from: number,
  limit: number,
): number[] {
  const cursor = new MatchCursor(compileAt(store, query, "observation"), optionsOf(query, from));
  const buffer = new Uint32Array(Math.min(limit, 1 << 16));
  const n = cursor.next(buffer, Math.min(limit, buffer.length));
  return Array.from(buffer.subarray(0, n));
}

function matchingLocations(
  store: WaterStore,
  query: CollectionQuery,
  from: number,
  limit: number,
): number[] {
  if (levelOf(query) !== "observation") {
    const compiled = compileAt(store, query, "location");
    const out: number[] = [];
    const cursor = new MatchCursor(compiled, optionsOf(query, from));
    const buffer = new Uint32Array(4096);
    while (out.length < limit) {
      const n = cursor.next(buffer, Math.min(buffer.length, limit - out.length));
      for (let i = 0; i < n; i++) out.push(buffer[i]!);
      if (n < buffer.length) break;
    }
    return out;
  }
  const compiled = compileAt(store, query, "observation");
  return distinctGroups(compiled, store.locationRowStarts, from, limit, query.checkpoint);
}

function matchingDatasets(store: WaterStore, query: CollectionQuery): number[] {
  const level = levelOf(query);
  if (level === "dataset") {
    const compiled = compileAt(store, query, "dataset");
    const buffer = new Uint32Array(store.datasetCount);
    const n = new MatchCursor(compiled, optionsOf(query, 0)).next(buffer);
    return Array.from(buffer.subarray(0, n));
  }
  const compiled = compileAt(store, query, level);
  const starts = level === "location"
    ? store.datasetLocationStarts
    : store.datasetLocationStarts.map((l) => store.locationRowStarts[l]!);
  return distinctGroups(compiled, starts, 0, Infinity, query.checkpoint);
}

/** Groups (locations, datasets) holding at least one matching row, from group `from` on. */
function distinctGroups(
  compiled: CompiledFilter,
  starts: Uint32Array,
  from: number,
  limit: number,
  checkpoint: (() => void) | undefined,
): number[] {
  const groups = starts.length - 1;
  if (from >= groups) return [];
  const cursor = new MatchCursor(
    compiled,
    checkpoint === undefined ? { from: starts[from]! } : {
      from: starts[from]!,
      checkpoint,
    },
  );
  const out: number[] = [];
  const one = new Uint32Array(1);
  let group = from;
  while (out.length < limit && cursor.next(one, 1) === 1) {
    const row = one[0]!;
    while (starts[group + 1]! <= row) group++;
    out.push(group);
    cursor.seek(starts[group + 1]!);
  }
  return out;
}

/**
 * Compiled plans by store and bound filter: a client paging through a result
 * sends the same filter with every page, and a plan, being immutable, serves
 * them all. Plans go when their bound filter is no longer referenced.
 */
const plans = new WeakMap<WaterStore, WeakMap<BoundFilter, Map<string, CompiledFilter>>>();

function compileAt(store: WaterStore, query: CollectionQuery, level: FieldLevel): CompiledFilter {
  const filter = query.filter;
  if (filter === undefined) {
    return compileFilter(undefined, store.view(level, query.collection.filter));
  }
  let byFilter = plans.get(store);
  if (byFilter === undefined) {
    byFilter = new WeakMap();
    plans.set(store, byFilter);
  }
  let byLevel = byFilter.get(filter);
  if (byLevel === undefined) {
    byLevel = new Map();
    byFilter.set(filter, byLevel);
  }
  const key = `${query.collection.name}:${level}`;
  let compiled = byLevel.get(key);
  if (compiled === undefined) {
    compiled = compileFilter(filter, store.view(level, query.collection.filter));
    // A plan may hold a materialized candidate list (a union of postings, say);
    // only small ones are kept, so that cached plans cannot pin much memory.
    if (candidateEntries(compiled) <= MAX_CACHED_CANDIDATES) byLevel.set(key, compiled);
  }
  return compiled;
}

/** Candidate entries a plan holds; a plan above this is compiled again each time. */
const MAX_CACHED_CANDIDATES = 1 << 16;

function candidateEntries(compiled: CompiledFilter): number {
  const candidates = compiled.candidates;
  if (candidates === undefined) return 0;
  return candidates.kind === "rows" ? candidates.rows.length : candidates.ranges.length;
}

/** The finest level a query's filter reads, or the collection's own level when coarser. */
function levelOf(query: CollectionQuery): FieldLevel {
  let level: FieldLevel = "dataset";
  const visit = (value: BoundValue): void => {
    if (value.kind === "field") {
      const field = query.collection.filter.get(value.name);
      if (field !== undefined && DEPTH[field.source.level] > DEPTH[level]) {
        level = field.source.level;
      }
    } else if (value.kind === "call") {
      value.args.forEach(visit);
    }
  };
  const walk = (filter: BoundFilter): void => {
    switch (filter.kind) {
      case "and":
      case "or":
        filter.operands.forEach(walk);
        break;
      case "not":
        walk(filter.operand);
        break;
      case "compare":
        visit(filter.left);
        visit(filter.right);
        break;
      case "in":
        visit(filter.operand);
        break;
      case "test":
        visit(filter.value);
        break;
      case "constant":
        break;
    }
  };
  if (query.filter !== undefined) walk(query.filter);
  return DEPTH[level] < DEPTH[query.collection.level] ? query.collection.level : level;
}

/**
 * Where a page after a `$skiptoken` of the locations or observations starts:
 * past every row whose id is at most the token's, so that a token stays
 * valid while its row's dataset is unchanged.
 * @param store the store
 * @param level `location` or `observation`
 * @param token the text after `Id:`
 * @returns the first row to read
 * @throws {ODataError} `ERR_ODATA_QUERY_OPTION` when the id is not an integer
 * @throws {WaterError} `ERR_WATER_TOKEN_GONE` when the id was a row of a dataset replaced or removed since
 */
export function rowAfterToken(store: WaterStore, level: RowLevel, token: string): number {
  const id = readRowToken(token);
  if (store.isRetiredId(level, id)) throw tokenGone(token);
  return store.rowsThroughId(level, id);
}

function tokenGone(token: string): WaterError {
  return new WaterError(
    "ERR_WATER_TOKEN_GONE",
    `Cannot continue after $skiptoken=Id:${token}: the dataset of that row was replaced or removed since the link was made; start again without $skiptoken`,
    { target: "$skiptoken" },
  );
}

/**
 * Reads the id in a `$skiptoken` of an integer-keyed collection.
 * @param token the text after `Id:`
 * @returns the id
 * @throws {ODataError} `ERR_ODATA_QUERY_OPTION` when the id is not an integer
 */
export function readRowToken(token: string): number {
  if (!/^[0-9]{1,15}$/.test(token)) {
    throw new ODataError(
      "ERR_ODATA_QUERY_OPTION",
      `Cannot use $skiptoken=Id:${token}: the id must be an integer`,
      {
        target: "$skiptoken",
      },
    );
  }
  return Number(token);
}

function readUuidToken(token: string): string {
  if (
    !/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(token)
  ) {
    throw new ODataError(
      "ERR_ODATA_QUERY_OPTION",
      `Cannot use $skiptoken=Id:${token}: the id must be a UUID`,
      {
        target: "$skiptoken",
      },
    );
  }
  return token.toLowerCase();
}

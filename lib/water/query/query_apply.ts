import {
  bindApply,
  type BoundApply,
  ODataError,
  parseApply,
  type Scalar,
} from "../../odata/mod.ts";
import { FULL_BATCH } from "../../columnar/mod.ts";
import { COLLECTIONS, type CollectionSchema } from "../fields.ts";
import type { WaterStore } from "../store/store.ts";
import { aggregateColumns } from "./aggregate_rows.ts";
import { type GroupedColumns, groupedRows } from "./grouped_columns.ts";
import {
  type CollectionQuery,
  filterSchemaOf,
  locationCursor,
  observationCursor,
  readsObservations,
} from "./query_collection.ts";

/**
 * The filterable names `$apply` cannot group, aggregate or compute with, and
 * what to do instead. A location is in several regions, so grouping by
 * `RegionId` would count each reading once per region of its location (and
 * its groups would not add up to the whole); a region is a filter.
 */
export const UNGROUPABLE: ReadonlyMap<string, string> = new Map([
  [
    "RegionId",
    "Cannot group or aggregate by RegionId: a location is in several regions, so its readings would count once in each; filter by region instead, inside $apply before the grouping, e.g. filter(RegionId eq 'hub.atlantic')/groupby((LocationId), aggregate($count as N))",
  ],
]);

/** The names `$apply` on `/Locations` cannot group or aggregate by: its regions, and the observations' fields. */
const LOCATION_UNGROUPABLE: ReadonlyMap<string, string> = new Map([
  ...UNGROUPABLE,
  ...[...COLLECTIONS.get("Locations")!.filter.values()]
    .filter((field) => field.source.level === "observation")
    .map((field): [string, string] => [
      field.name,
      `Cannot group or aggregate /Locations by ${field.name}: a location has many observations, each with its own ${field.name}; aggregate the observations on /Observations (grouped by LocationId, say), or filter the locations by it`,
    ]),
]);

/**
 * Parses and binds an `$apply` for a collection. The observation-level
 * collections (`/Observations`, `/Records`) take it: every filterable name
 * of theirs but `RegionId` (see {@linkcode UNGROUPABLE}) can be grouped and
 * counted, and the numbers (`ResultValue`, `ActivityDepthHeightMeasure`,
 * `ResultDetectionQuantitationLimitMeasure`, the coordinates, and
 * `ActivityStartYear`) summed and averaged. `/Locations` takes one that
 * aggregates its locations: grouped by their own and their dataset's
 * fields, the coordinates and measures summed and averaged; its filter may
 * test the observations (a location is kept when one of them satisfies
 * it), so at most one filter before the aggregation may, as two would ask
 * of one observation what each asks of any.
 * @param collection the collection
 * @param text the `$apply` text
 * @returns the bound `$apply`
 * @throws {ApplySyntaxError} or {ODataError} for a bad `$apply`, or one on `/Metadata`
 */
export function prepareApply(collection: CollectionSchema, text: string): BoundApply {
  if (collection.level === "dataset") {
    throw new ODataError(
      "ERR_ODATA_UNSUPPORTED",
      `Cannot use $apply on /${collection.name}: aggregate the locations on /Locations or the observations on /Observations, grouped by DOI`,
      { target: "$apply" },
    );
  }
  const node = parseApply(text);
  if (collection.level === "observation") {
    return bindApply(node, filterSchemaOf(collection), { ungroupable: UNGROUPABLE });
  }
  const bound = bindApply(node, filterSchemaOf(collection), { ungroupable: LOCATION_UNGROUPABLE });
  if (!bound.aggregated) {
    throw new ODataError(
      "ERR_ODATA_UNSUPPORTED",
      `Cannot use an $apply that neither groups nor aggregates on /${collection.name}: select locations with $filter; an $apply on /${collection.name} groups or aggregates them`,
      { target: "$apply" },
    );
  }
  const end = node.findIndex((t) => t.kind === "groupby" || t.kind === "aggregate");
  const filters = node.slice(0, end).filter((t) => t.kind === "filter");
  const second = filters[1];
  if (
    second !== undefined && bound.filter !== undefined &&
    readsObservations({ collection, filter: bound.filter })
  ) {
    throw new ODataError(
      "ERR_ODATA_UNSUPPORTED",
      `Cannot chain filters before the aggregation at position ${second.span.start} of $apply on /${collection.name} when they test observations: join them with and in one filter (a location is kept when one of its observations satisfies it)`,
      { target: "$apply", position: second.span.start },
    );
  }
  return bound;
}

/** The batches of the cursor of an aggregation, one after another. */
const PENDING = new Uint32Array(FULL_BATCH);

/** What {@linkcode aggregateQuery} needs besides the store. */
export interface AggregateQuery {
  readonly collection: CollectionSchema;
  readonly apply: BoundApply;
  /** Called between batches; throws to stop a query past its deadline. */
  readonly checkpoint?: () => void;
  /** Most groups. */
  readonly maxGroups?: number;
}

/**
 * Aggregates a collection's rows (observations, or the locations of
 * `/Locations`) as a bound `$apply` says (see `aggregateRows`): the rows its
 * filter selects, through the same compiled plans as a page's.
 * @param store the store
 * @param query the collection, the bound `$apply`, the checkpoint and the group limit
 * @returns one row per group: the grouping properties' values, then the aggregates
 * @throws {WaterError} `ERR_WATER_TOO_MANY_GROUPS` above the group limit
 */
export function aggregateQuery(store: WaterStore, query: AggregateQuery): Scalar[][] {
  return groupedRows(aggregateQueryColumns(store, query));
}

/**
 * What {@linkcode aggregateQuery} computes, as columns (see `GroupedColumns`).
 * @param store the store
 * @param query the collection, the bound `$apply`, the checkpoint and the group limit
 * @returns the groups: the grouping properties' columns, then the aggregates'
 * @throws {WaterError} `ERR_WATER_TOO_MANY_GROUPS` above the group limit
 */
export function aggregateQueryColumns(store: WaterStore, query: AggregateQuery): GroupedColumns {
  const { collection, apply } = query;
  const rows: CollectionQuery = {
    collection,
    ...(apply.filter === undefined ? {} : { filter: apply.filter }),
    ...(query.checkpoint === undefined ? {} : { checkpoint: query.checkpoint }),
  };
  const location = collection.level === "location";
  // The cursor is read to its end before this returns, so one buffer serves every aggregation.
  const cursor = location ? locationCursor(store, rows) : observationCursor(store, rows, PENDING);
  return aggregateColumns(
    store.view(location ? "location" : "observation", collection.filter),
    cursor,
    apply,
    query.maxGroups === undefined ? {} : { maxGroups: query.maxGroups },
  );
}

/**
 * Aggregated groups kept for reuse, by key (collection and `$apply` text),
 * the least recently used let go of first: a client paging through an
 * aggregated result asks for the same aggregation with every page, and a
 * store's rows do not change (a reload makes a new store, with a new cache).
 * A result is a few typed arrays (see `GroupedColumns`), so keeping one
 * costs the garbage collector little.
 */
export class AggregateCache {
  readonly #kept = new Map<string, GroupedColumns>();
  readonly #maxCells: number;
  #cells = 0;

  /**
   * @param maxCells values kept at most (groups times columns); a result over a quarter of it is not kept
   */
  constructor(maxCells = 4_000_000) {
    this.#maxCells = maxCells;
  }

  /**
   * The groups kept under a key, or those `compute` makes, then kept.
   * @param key the collection and `$apply` text
   * @param compute makes the groups
   * @returns the groups (not to be changed)
   */
  get(key: string, compute: () => GroupedColumns): GroupedColumns {
    const hit = this.#kept.get(key);
    if (hit !== undefined) {
      this.#kept.delete(key);
      this.#kept.set(key, hit);
      return hit;
    }
    const groups = compute();
    const cells = cellsOf(groups);
    if (cells <= this.#maxCells / 4) {
      while (this.#cells + cells > this.#maxCells) {
        const [oldest, old] = this.#kept.entries().next().value!;
        this.#kept.delete(oldest);
        this.#cells -= cellsOf(old);
      }
      this.#kept.set(key, groups);
      this.#cells += cells;
    }
    return groups;
  }
}

function cellsOf(groups: GroupedColumns): number {
  // A column of any values (boxed numbers, strings) costs several typed-array cells a value.
  let width = 0;
  for (const column of groups.columns) width += column.kind === "values" ? VALUE_CELLS : 1;
  return groups.count * Math.max(1, width);
}

/** What one value of a column of any values counts for against the cache's budget, in cells. */
const VALUE_CELLS = 4;

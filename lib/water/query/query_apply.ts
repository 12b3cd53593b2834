import {
  bindApply,
  type BoundApply,
  ODataError,
  parseApply,
  type Scalar,
} from "../../odata/mod.ts";
import type { CollectionSchema } from "../fields.ts";
import type { WaterStore } from "../store/store.ts";
import { aggregateRows } from "./aggregate_rows.ts";
import { filterSchemaOf, observationCursor } from "./query_collection.ts";

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

/**
 * Parses and binds an `$apply` for a collection: the observation-level
 * collections (`/Observations`, `/Records`) take it; every filterable name
 * of theirs but `RegionId` (see {@linkcode UNGROUPABLE}) can be grouped and
 * counted, and the numbers (`ResultValue`, `ActivityDepthHeightMeasure`,
 * `ResultDetectionQuantitationLimitMeasure`, the coordinates, and
 * `ActivityStartYear`) summed and averaged.
 * @param collection the collection
 * @param text the `$apply` text
 * @returns the bound `$apply`
 * @throws {ApplySyntaxError} or {ODataError} for a bad `$apply`, or one on `/Locations` or `/Metadata`
 */
export function prepareApply(collection: CollectionSchema, text: string): BoundApply {
  if (collection.level !== "observation") {
    throw new ODataError(
      "ERR_ODATA_UNSUPPORTED",
      `Cannot use $apply on /${collection.name}: aggregate the observations, on /Observations or /Records (group by LocationId or DOI)`,
      { target: "$apply" },
    );
  }
  return bindApply(parseApply(text), filterSchemaOf(collection), { ungroupable: UNGROUPABLE });
}

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
 * Aggregates a collection's observations as a bound `$apply` says (see
 * `aggregateRows`): the rows its filter selects, through the same compiled
 * plans as a page's.
 * @param store the store
 * @param query the collection, the bound `$apply`, the checkpoint and the group limit
 * @returns one row per group: the grouping properties' values, then the aggregates
 * @throws {WaterError} `ERR_WATER_TOO_MANY_GROUPS` above the group limit
 */
export function aggregateQuery(store: WaterStore, query: AggregateQuery): Scalar[][] {
  const { collection, apply } = query;
  const cursor = observationCursor(store, {
    collection,
    ...(apply.filter === undefined ? {} : { filter: apply.filter }),
    ...(query.checkpoint === undefined ? {} : { checkpoint: query.checkpoint }),
  });
  return aggregateRows(
    store.view("observation", collection.filter),
    cursor,
    apply,
    query.maxGroups === undefined ? {} : { maxGroups: query.maxGroups },
  );
}

/**
 * Aggregated rows kept for reuse, by key (collection and `$apply` text),
 * the least recently used let go of first: a client paging through an
 * aggregated result asks for the same aggregation with every page, and a
 * store's rows do not change (a reload makes a new store, with a new cache).
 */
export class AggregateCache {
  readonly #kept = new Map<string, readonly (readonly Scalar[])[]>();
  readonly #maxCells: number;
  #cells = 0;

  /**
   * @param maxCells values kept at most (rows times properties); a result over a quarter of it is not kept
   */
  constructor(maxCells = 4_000_000) {
    this.#maxCells = maxCells;
  }

  /**
   * The rows kept under a key, or those `compute` makes, then kept.
   * @param key the collection and `$apply` text
   * @param compute makes the rows
   * @returns the rows (not to be changed)
   */
  get(key: string, compute: () => Scalar[][]): readonly (readonly Scalar[])[] {
    const hit = this.#kept.get(key);
    if (hit !== undefined) {
      this.#kept.delete(key);
      this.#kept.set(key, hit);
      return hit;
    }
    const rows = compute();
    const cells = cellsOf(rows);
    if (cells <= this.#maxCells / 4) {
      while (this.#cells + cells > this.#maxCells) {
        const [oldest, old] = this.#kept.entries().next().value!;
        this.#kept.delete(oldest);
        this.#cells -= cellsOf(old);
      }
      this.#kept.set(key, rows);
      this.#cells += cells;
    }
    return rows;
  }
}

function cellsOf(rows: readonly (readonly Scalar[])[]): number {
  return rows.length * Math.max(1, rows[0]?.length ?? 1);
}

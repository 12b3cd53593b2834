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
    "Cannot group or aggregate by RegionId: a location is in several regions, so its readings would count once in each; filter by region instead, e.g. filter(RegionId eq 'hub.atlantic')/groupby(...) or $filter=RegionId eq 'hub.atlantic' on a grouped property",
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

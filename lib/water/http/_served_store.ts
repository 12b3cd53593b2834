import type { Deadline } from "../../http/mod.ts";
import type { BoundApply, BoundFilter, QueryOptions } from "../../odata/mod.ts";
import type { CollectionSchema } from "../fields.ts";
import { RankCache } from "../query/order_rows.ts";
import { AggregateCache } from "../query/query_apply.ts";
import { type CollectionQuery, prepareFilter } from "../query/query_collection.ts";
import { CompressedPages } from "../render/compressed_pages.ts";
import { RenderCache, RowWriterCache } from "../render/render_cache.ts";
import type { JsonPageSettings } from "../render/render_json_page.ts";
import { ScratchBuffers } from "../render/scratch_buffers.ts";
import type { WaterStore } from "../store/store.ts";

/** The limits every store is served with, from the service's options. */
export interface ServeLimits {
  /** Longest time a query may run, in milliseconds. */
  readonly timeout: number;
  /** Bytes from which a page is compressed (when the client takes it so). */
  readonly compressAbove: number;
  /** Largest JSON response body. */
  readonly maxBytes: number;
  /** `$top` when the request gives none. */
  readonly defaultTop: number;
  /** Bytes of rendered rows kept for reuse; 0 turns the cache off. */
  readonly renderCacheBytes: number;
  /** Most groups an `$apply` may make. */
  readonly maxGroups: number;
}

/** What every store shares: bound queries, which depend on the schema only. */
export interface SharedBindings {
  /** Bound filters by collection and text. */
  readonly filters: Map<string, BoundFilter>;
  /** Bound `$apply`s by collection and text. */
  readonly applies: Map<string, BoundApply>;
}

/** What answering a page uses: the limits, and the caches kept for one store. */
export interface PageSettings extends JsonPageSettings {
  readonly timeout: number;
  /** Bytes from which a page is compressed (when the client takes it so). */
  readonly compressAbove: number;
  readonly defaultTop: number;
  readonly writers: RowWriterCache;
  /** Bound filters by collection and text, shared by every store (they depend on the schema only). */
  readonly filters: Map<string, BoundFilter>;
  /** Bound `$apply`s by collection and text, shared like the filters. */
  readonly applies: Map<string, BoundApply>;
  /** Most groups an `$apply` may make. */
  readonly maxGroups: number;
  /** Aggregated rows of this store, by collection and `$apply`. */
  readonly aggregates: AggregateCache;
  readonly ranks: RankCache;
}

/** A store with what is kept for it: rendered rows, compressed pages, ranks and orders. */
export interface ServedStore {
  readonly store: WaterStore;
  readonly settings: PageSettings;
  readonly compressed: CompressedPages;
}

/**
 * A store as the service serves it, with new caches of its own: a new
 * store (after a reload) gets new ones, and the old ones go with the
 * requests that hold them.
 * @param store the store
 * @param limits the service's limits
 * @param shared the bound filters and `$apply`s every store shares
 * @returns the store and its caches
 */
export function serveStore(
  store: WaterStore,
  limits: ServeLimits,
  shared: SharedBindings,
): ServedStore {
  const cache = new RenderCache(limits.renderCacheBytes);
  return {
    store,
    settings: {
      timeout: limits.timeout,
      compressAbove: limits.compressAbove,
      maxBytes: limits.maxBytes,
      defaultTop: limits.defaultTop,
      cache,
      writers: new RowWriterCache(store, cache),
      filters: shared.filters,
      applies: shared.applies,
      maxGroups: limits.maxGroups,
      aggregates: new AggregateCache(),
      ranks: new RankCache(),
      // Twice a slice of observations (about 1 MB), for as many slices as the compressors hold at once and a few more.
      scratch: new ScratchBuffers(2 * 1024 * 1024, 8),
    },
    // A quarter of the render cache's budget: compressed pages are some 2 to 10 % of their size.
    compressed: new CompressedPages(
      Math.floor(limits.renderCacheBytes / 4),
      Math.max(64 * 1024, limits.compressAbove),
    ),
  };
}

/** Bound filters kept, by collection and text, so that paging through a result binds its filter once. */
const MAX_FILTERS = 512;

/**
 * The query a request's options ask of a collection, its `$filter` bound
 * once and kept (the oldest let go of past {@linkcode MAX_FILTERS}).
 * @param collection the collection
 * @param options the request's query options
 * @param deadline checked between batches
 * @param filters the bound filters kept
 * @returns the query
 * @throws {FilterSyntaxError} or {ODataError} for a bad filter
 */
export function readQuery(
  collection: CollectionSchema,
  options: QueryOptions,
  deadline: Deadline,
  filters: Map<string, BoundFilter>,
): CollectionQuery {
  const text = options.filter;
  if (text === undefined) return { collection, checkpoint: deadline.check };
  const filter = keptFor(
    filters,
    `${collection.name}\n${text}`,
    MAX_FILTERS,
    () => prepareFilter(collection, text),
  );
  return { collection, filter, checkpoint: deadline.check };
}

/**
 * What `cache` keeps for `key`, made by `make` the first time and kept, the
 * oldest let go of past `max`: a query's bound filter or `$apply`, so that
 * paging through a result binds it once.
 * @param cache what is kept, by key, oldest first
 * @param key the collection and the query text
 * @param max how many are kept at most
 * @param make binds it (and may throw for a bad query; nothing is kept then)
 * @returns the kept or new value
 */
export function keptFor<V>(cache: Map<string, V>, key: string, max: number, make: () => V): V {
  let value = cache.get(key);
  if (value === undefined) {
    value = make();
    if (cache.size >= max) cache.delete(cache.keys().next().value!);
    cache.set(key, value);
  }
  return value;
}

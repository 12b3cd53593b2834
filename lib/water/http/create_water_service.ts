import {
  type ApiKey,
  authenticateApiKey,
  createDeadline,
  createRouter,
  errorStatuses,
  type HttpRequest,
  type Identity,
  keepRoutes,
  type KeyLimiter,
  RateLimiter,
  type Route,
  type Router,
  withCors,
  withErrorStatuses,
  withRateLimit,
} from "../../http/mod.ts";
import { jsonResponse } from "../../http/_internal.ts";
import type { BoundApply, BoundFilter } from "../../odata/mod.ts";
import { WaterError } from "../errors.ts";
import { type CollectionName, COLLECTIONS } from "../fields.ts";
import { WATER_ERROR_STATUS } from "../error_status.ts";
import { DEFAULT_RATE_BURST } from "../settings.ts";
import { MAX_GROUPS } from "../query/aggregate_rows.ts";
import { WaterStore } from "../store/store.ts";
import { answerCount, answerEntity, answerQuery, ODATA_HEADERS } from "./_answer_query.ts";
import { type ServedStore, serveStore } from "./_served_store.ts";
import { collectionDoc, countDoc, WATER_DOCS } from "./api_docs.ts";
import { metadataDocument, serviceDocument } from "./service_document.ts";

/** Options of {@linkcode createWaterService}. */
export interface WaterServiceOptions {
  /** Accepted API keys, by hash (see `indexApiKeys`). */
  keys: ReadonlyMap<string, ApiKey>;
  /** Monotonic clock in milliseconds, for rate limits and deadlines. */
  now: () => number;
  /**
   * Path of the service root.
   * @default {"/v1/odata/v4"}
   */
  basePath?: string;
  /**
   * Browser origins allowed to call the API; their `GET` requests may omit the key.
   * @default {[]}
   */
  corsOrigins?: readonly string[];
  /**
   * Requests per second per key (or origin); 0 turns the limit off.
   * @default {2}
   */
  ratePerSecond?: number;
  /**
   * Requests a key may make at once after being idle (the token bucket's
   * size), refilled at `ratePerSecond`.
   * @default {DEFAULT_RATE_BURST}
   */
  burst?: number;
  /**
   * Requests per key in flight at once; 0 turns the limit off.
   * @default {1}
   */
  maxConcurrent?: number;
  /**
   * Counts the per-key limits elsewhere, e.g. a `RedisRateLimiter` shared by
   * every replica; `ratePerSecond`, `burst` and `maxConcurrent` are then its business.
   * @default a `RateLimiter` in this process
   */
  limiter?: KeyLimiter;
  /**
   * Longest time a query may run before it is answered 408.
   * @default {30000}
   */
  queryTimeoutMs?: number;
  /**
   * Largest JSON response body; a larger result is answered 413.
   * @default {33554432}
   */
  maxResponseBytes?: number;
  /**
   * `$top` when the request gives none.
   * @default {1000}
   */
  defaultTop?: number;
  /**
   * Bytes of rendered rows kept for reuse (see `RenderCache`); 0 turns the cache off.
   * @default {67108864}
   */
  renderCacheBytes?: number;
  /**
   * The size from which answers are compressed (the app's
   * `COMPRESS_ABOVE_BYTES`, applied by `withCompression` around the app):
   * big pages this service compresses itself, as they render or from the
   * compressed pages it keeps, follow the same threshold, so a value above
   * `maxResponseBytes` turns compression off here too.
   * @default {1024}
   */
  compressAboveBytes?: number;
  /**
   * Most groups an `$apply` may make; more is answered 400 `ERR_WATER_TOO_MANY_GROUPS`.
   * @default {100000}
   */
  maxGroups?: number;
}

/** Where the service finds the store to answer from, e.g. `LiveDatasets`, whose store a reload replaces. */
export interface StoreSource {
  /** The store new requests are answered from; a request keeps the one it started with. */
  readonly store: WaterStore;
}

/** The headers a page of another origin may read: paging, pacing and the protocol's version. */
export const EXPOSED_HEADERS: readonly string[] = [
  "link",
  "retry-after",
  "odata-version",
  "ratelimit-policy",
  "ratelimit-limit",
  "ratelimit-remaining",
  "ratelimit-reset",
];

/**
 * Creates the water-data query API: `GET` on the service root, `$metadata`,
 * `/Metadata`, `/Locations`, `/Observations`, `/Records` and their `/$count`,
 * behind API-key authentication, per-key rate limits and CORS. Answers JSON
 * pages with `@odata.nextLink` and `Link`, counts, and CSV streams. Given a
 * source whose store changes (a reload), each request is answered wholly from
 * the store it started with, and what is kept for a store (rendered rows,
 * compressed pages, ranks) goes with it: nothing of an old store is served
 * after the change.
 * @param source the loaded store, or where to find the current one
 * @param options keys, clock and limits
 * @returns the handler
 * @example
 * ```ts
 * const handler = createWaterService(store, { keys: indexApiKeys([parseApiKey("demo", "secret")]), now: () => performance.now() });
 * ```
 */
export function createWaterService(
  source: WaterStore | StoreSource,
  options: WaterServiceOptions,
): Router {
  const base = options.basePath ?? "/v1/odata/v4";
  const compressAbove = options.compressAboveBytes ?? 1024;
  const live: StoreSource = source instanceof WaterStore ? { store: source } : source;
  // Bound filters and $apply depend on the schema only, so every store shares them.
  const shared = {
    filters: new Map<string, BoundFilter>(),
    applies: new Map<string, BoundApply>(),
  };
  const timeout = options.queryTimeoutMs ?? 30_000;
  const limits = {
    timeout,
    compressAbove,
    maxBytes: options.maxResponseBytes ?? 32 * 1024 * 1024,
    defaultTop: options.defaultTop ?? 1000,
    renderCacheBytes: options.renderCacheBytes ?? 64 * 1024 * 1024,
    maxGroups: options.maxGroups ?? MAX_GROUPS,
  };
  let served = serveStore(live.store, limits, shared);
  /** The current store and its caches; a new store gets new caches, and the old ones go with the requests that hold them. */
  const current = (): ServedStore => {
    const store = live.store;
    if (served.store !== store) served = serveStore(store, limits, shared);
    return served;
  };
  const origin = (request: HttpRequest): string => request.origin;
  const router = createRouter([
    {
      method: "GET",
      path: base,
      handler: (request) =>
        jsonResponse(200, serviceDocument(`${origin(request)}${base}`), ODATA_HEADERS),
      doc: WATER_DOCS.service,
    },
    {
      method: "GET",
      path: `${base}/$metadata`,
      handler: () => ({
        status: 200,
        headers: { "content-type": "application/xml; charset=utf-8", ...ODATA_HEADERS },
        body: metadataDocument(),
      }),
      doc: WATER_DOCS.metadata,
    },
    // One route per collection, from the collection table: each is its own
    // route in the metrics and the documents.
    ...[...COLLECTIONS.values()].flatMap((collection): Route[] => [
      {
        method: "GET",
        path: `${base}/${collection.name}`,
        handler: (request) => {
          const { store, settings, compressed } = current();
          // The deadline starts when the page is made: a kept page needs none.
          return compressed.answer(
            request,
            (coding) =>
              answerQuery(
                store,
                collection,
                request,
                createDeadline(timeout, options.now),
                settings,
                {
                  origin: origin(request),
                  base,
                },
                coding,
              ),
          );
        },
        doc: collectionDoc(collection),
      },
      {
        method: "GET",
        path: `${base}/${collection.name}/$count`,
        handler: (request) => {
          const { store, settings } = current();
          const deadline = createDeadline(timeout, options.now);
          return answerCount(store, collection, request, deadline, settings);
        },
        doc: countDoc(collection),
      },
    ]),
    {
      method: "GET",
      // An entity by key, `/Locations(42)` or `/Metadata(<uuid>)`, as generic OData clients read one; else an unknown collection.
      path: `${base}/:collection`,
      handler: (request, params) => {
        const target = params["collection"]!;
        const byKey = ENTITY_KEY.exec(target);
        const collection = byKey === null ? undefined : COLLECTIONS.get(byKey[1] as CollectionName);
        if (collection === undefined) return unknownCollection(target);
        const { store, settings } = current();
        const deadline = createDeadline(timeout, options.now);
        return answerEntity(store, collection, byKey![2]!, request, deadline, settings, {
          origin: origin(request),
          base,
        });
      },
      doc: WATER_DOCS.entity,
    },
    {
      method: "GET",
      path: `${base}/:collection/$count`,
      handler: (_request, params) => unknownCollection(params["collection"]!),
      doc: WATER_DOCS.unknownCount,
    },
  ]);
  const limiter = options.limiter ?? new RateLimiter({
    ratePerSecond: options.ratePerSecond ?? 2,
    burst: options.burst ?? DEFAULT_RATE_BURST,
    maxConcurrent: options.maxConcurrent ?? 1,
    now: options.now,
  });
  const authenticate = { keys: options.keys, keylessOrigins: new Set(options.corsOrigins ?? []) };
  // What a caller's requests count against, made once per identity (authenticateApiKey gives one record per key).
  const limitKeys = new WeakMap<Identity, string>();
  const identify = (request: HttpRequest): string => {
    const identity = authenticateApiKey(request, authenticate);
    let key = limitKeys.get(identity);
    if (key === undefined) limitKeys.set(identity, key = `${identity.kind}:${identity.id}`);
    return key;
  };
  // Its errors answered as the JSON error body with their statuses, inside the limit, so that they tell the quota too.
  return keepRoutes(
    withCors(withRateLimit(withErrorStatuses(router, STATUSES), limiter, identify), {
      origins: options.corsOrigins ?? [],
      methods: ["GET", "HEAD"],
      exposeHeaders: EXPOSED_HEADERS,
    }),
    router,
  );
}

/** The statuses of the codes the water API answers with. */
const STATUSES = errorStatuses(WATER_ERROR_STATUS);

function unknownCollection(name: string): never {
  throw new WaterError(
    "ERR_WATER_NOT_FOUND",
    `Cannot find collection "${name}": use ${[...COLLECTIONS.keys()].join(", ")}`,
    { target: name },
  );
}

/** `Collection(key)`: a key in parentheses, quoted or not. */
const ENTITY_KEY = /^([A-Za-z]+)\((.+)\)$/;

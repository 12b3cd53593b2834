import {
  type ApiKey,
  authenticateApiKey,
  compressParts,
  type ContentCoding,
  createDeadline,
  createRouter,
  errorStatuses,
  keepRoutes,
  type Route,
  type Router,
  type Deadline,
  type HttpRequest,
  type HttpResponse,
  JSON_CONTENT_TYPE,
  jsonResponse,
  parseQuery,
  type KeyLimiter,
  RateLimiter,
  withCors,
  withErrorStatuses,
  withRateLimit,
} from "../../http/mod.ts";
import { type BoundFilter, buildNextLink, type OrderKey, type QueryOptions, readQueryOptions } from "../../odata/mod.ts";
import { collectionDoc, countDoc, WATER_DOCS } from "./api_docs.ts";
import { WATER_ERROR_STATUS } from "../error_status.ts";
import { WaterError } from "../errors.ts";
import { type CollectionName, type CollectionSchema, COLLECTIONS } from "../fields.ts";
import {
  type CollectionQuery,
  observationBatches,
  orderedPage,
  type PageResult,
  prepareFilter,
  queryCount,
  queryPage,
  rowAfterToken,
} from "../query/query_collection.ts";
import { CompressedPages } from "../render/compressed_pages.ts";
import { RankCache } from "../query/order_rows.ts";
import { ScratchBuffers } from "../render/scratch_buffers.ts";
import { RenderCache, type RenderedRow, renderKey, RowWriterCache } from "../render/render_cache.ts";
import type { RowWriter } from "../render/render_rows.ts";
import { metadataDocument, serviceDocument } from "./service_document.ts";
import { DEFAULT_RATE_BURST } from "../settings.ts";
import { WaterStore } from "../store/store.ts";

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
   * Bytes of rendered rows kept for reuse (see {@linkcode RenderCache}); 0 turns the cache off.
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
}

const encoder = new TextEncoder();
const CSV_BATCH = 2048;

/** Where the service finds the store to answer from, e.g. `LiveDatasets`, whose store a reload replaces. */
export interface StoreSource {
  /** The store new requests are answered from; a request keeps the one it started with. */
  readonly store: WaterStore;
}

/** A store with what is kept for it: rendered rows, compressed pages, ranks and orders. */
interface Served {
  readonly store: WaterStore;
  readonly settings: Settings;
  readonly compressed: CompressedPages;
}

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
export function createWaterService(source: WaterStore | StoreSource, options: WaterServiceOptions): Router {
  const base = options.basePath ?? "/v1/odata/v4";
  const compressAbove = options.compressAboveBytes ?? 1024;
  const live: StoreSource = source instanceof WaterStore ? { store: source } : source;
  // Bound filters depend on the schema only, so every store shares them.
  const filters = new Map<string, BoundFilter>();
  const serve = (store: WaterStore): Served => {
    const cache = new RenderCache(options.renderCacheBytes ?? 64 * 1024 * 1024);
    return {
      store,
      settings: {
        timeout: options.queryTimeoutMs ?? 30_000,
        compressAbove,
        maxBytes: options.maxResponseBytes ?? 32 * 1024 * 1024,
        defaultTop: options.defaultTop ?? 1000,
        cache,
        writers: new RowWriterCache(store, cache),
        filters,
        ranks: new RankCache(),
        // Twice a slice of observations (about 1 MB), for as many slices as the compressors hold at once and a few more.
        scratch: new ScratchBuffers(2 * 1024 * 1024, 8),
      },
      // A quarter of the render cache's budget: compressed pages are some 2 to 10 % of their size.
      compressed: new CompressedPages(Math.floor((options.renderCacheBytes ?? 64 * 1024 * 1024) / 4), Math.max(64 * 1024, compressAbove)),
    };
  };
  let served = serve(live.store);
  /** The current store and its caches; a new store gets new caches, and the old ones go with the requests that hold them. */
  const current = (): Served => {
    const store = live.store;
    if (served.store !== store) served = serve(store);
    return served;
  };
  const timeout = options.queryTimeoutMs ?? 30_000;
  const origin = (request: HttpRequest): string => request.origin;
  const router = createRouter([
    {
      method: "GET",
      path: base,
      handler: (request) => jsonResponse(200, serviceDocument(`${origin(request)}${base}`), ODATA_HEADERS),
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
          const deadline = createDeadline(timeout, options.now);
          return compressed.answer(request, (coding) => answerQuery(store, collection, request, deadline, settings, { origin: origin(request), base }, coding));
        },
        doc: collectionDoc(collection),
      },
      {
        method: "GET",
        path: `${base}/${collection.name}/$count`,
        handler: (request) => {
          const { store } = current();
          const deadline = createDeadline(timeout, options.now);
          const query = readQuery(collection, readQueryOptions(parseQuery(request.query)), deadline, filters);
          return {
            status: 200,
            headers: { "content-type": "text/plain; charset=utf-8", ...ODATA_HEADERS },
            body: String(queryCount(store, query)),
          };
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
        return answerEntity(store, collection, byKey![2]!, request, deadline, settings, { origin: origin(request), base });
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
  const keylessOrigins = new Set(options.corsOrigins ?? []);
  const identify = (request: HttpRequest): string => {
    const identity = authenticateApiKey(request, { keys: options.keys, keylessOrigins });
    return `${identity.kind}:${identity.id}`;
  };
  // Its errors answered as the JSON error body with their statuses, inside the limit, so that they tell the quota too.
  return keepRoutes(withCors(withRateLimit(withErrorStatuses(router, STATUSES), limiter, identify), {
    origins: options.corsOrigins ?? [],
    methods: ["GET", "HEAD"],
    exposeHeaders: ["link", "retry-after", "odata-version", "ratelimit-policy", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"],
  }), router);
}

const ODATA_HEADERS = { "odata-version": "4.0" } as const;

/** The statuses of the codes the water API answers with. */
const STATUSES = errorStatuses(WATER_ERROR_STATUS);

function unknownCollection(name: string): never {
  throw new WaterError(
    "ERR_WATER_NOT_FOUND",
    `Cannot find collection "${name}": use ${[...COLLECTIONS.keys()].join(", ")}`,
    { target: name },
  );
}

/** Bound filters by collection and text, so that paging through a result binds its filter once. */
const MAX_FILTERS = 512;

function readQuery(
  collection: CollectionSchema,
  options: QueryOptions,
  deadline: Deadline,
  filters: Map<string, BoundFilter>,
): CollectionQuery {
  const text = options.filter;
  if (text === undefined) return { collection, checkpoint: deadline.check };
  const key = `${collection.name}\n${text}`;
  let filter = filters.get(key);
  if (filter === undefined) {
    filter = prepareFilter(collection, text);
    if (filters.size >= MAX_FILTERS) filters.delete(filters.keys().next().value!);
    filters.set(key, filter);
  }
  return { collection, filter, checkpoint: deadline.check };
}

interface Settings {
  readonly timeout: number;
  /** Bytes from which a page is compressed (when the client takes it so). */
  readonly compressAbove: number;
  readonly maxBytes: number;
  readonly defaultTop: number;
  readonly cache: RenderCache;
  readonly writers: RowWriterCache;
  readonly filters: Map<string, BoundFilter>;
  readonly ranks: RankCache;
  /** Where the slices of pages compressed as they render are written. */
  readonly scratch: ScratchBuffers;
}

/** `$orderby` as a next link repeats it. */
function orderByText(keys: readonly OrderKey[]): string {
  return keys.map((key) => `${key.name}${key.descending ? " desc" : ""}`).join(",");
}

function answerQuery(
  store: WaterStore,
  collection: CollectionSchema,
  request: HttpRequest,
  deadline: Deadline,
  settings: Settings,
  root: { readonly origin: string; readonly base: string },
  coding: ContentCoding | undefined,
): HttpResponse | Promise<HttpResponse> {
  const options = readQueryOptions(parseQuery(request.query));
  const query = readQuery(collection, options, deadline, settings.filters);
  if (options.count) {
    const n = queryCount(store, query);
    return jsonResponse(200, { "@odata.count": n, value: n }, ODATA_HEADERS);
  }
  const { writer, id } = settings.writers.get(collection, options.select);
  const format = options.format ?? (prefersCsv(request.headers["accept"]) ? "csv" : "json");
  if (format === "csv" && options.top === undefined) return streamCsv(store, query, writer, options, deadline, settings);
  const top = options.top ?? settings.defaultTop;
  const skip = options.skip ?? 0;
  let page: PageResult;
  if (options.orderBy !== undefined) {
    page = orderedPage(store, query, options.orderBy, options.skipToken, skip, top, settings.ranks);
  } else {
    // $skip passes over matching rows after the $skiptoken; the next link carries a token, not the skip.
    const found = queryPage(store, query, options.skipToken, top + skip);
    page = skip === 0 ? found : { rows: found.rows.slice(skip), more: found.more };
  }
  deadline.check();
  const last = page.rows[page.rows.length - 1];
  const link = page.more && last !== undefined
    ? buildNextLink({
      origin: root.origin,
      path: `${root.base}/${collection.name}`,
      ...(options.filter === undefined ? {} : { filter: options.filter }),
      ...(options.select === undefined ? {} : { select: options.select }),
      ...(options.orderBy === undefined ? {} : { orderBy: orderByText(options.orderBy) }),
      top,
      ...(options.format === undefined ? {} : { format: options.format }),
      lastId: idOf(store, collection, last),
    })
    : undefined;
  const headers: Record<string, string> = { ...ODATA_HEADERS };
  if (link !== undefined) headers["link"] = `<${link}>; rel="next"`;
  if (format === "csv") {
    return {
      status: 200,
      headers: { ...headers, "content-type": "text/csv; charset=utf-8" },
      body: writer.csvHeader() + writer.csv(page.rows),
    };
  }
  const tail = link === undefined ? "]}" : `],"@odata.nextLink":${JSON.stringify(link)}}`;
  const context = contextUrl(root, collection, options.select);
  const head = encoder.encode(`{"@odata.context":${JSON.stringify(context)},"value":[`);
  if (coding !== undefined && page.rows.length > SLICE_ROWS) {
    // A big page the client takes compressed: compressed slice by slice while the next slice renders,
    // once its first slice shows it reaches the threshold (else it goes whole to the app's compression).
    const parts = jsonPageParts(page.rows, writer, id, settings, head, tail, deadline);
    const first = parts.next();
    if (first.done !== true) {
      const json = { ...headers, "content-type": JSON_CONTENT_TYPE };
      if (first.value.byteLength < settings.compressAbove) return { status: 200, headers: json, body: [first.value, ...parts] };
      return compressParts(chain(first.value, parts), coding, { release: (part) => settings.scratch.give(part) }).then((body) => ({
        status: 200,
        headers: { ...json, vary: "Accept-Encoding", "content-encoding": coding },
        body,
      }));
    }
  }
  const body = renderJsonPage(page.rows, writer, id, settings, head, tail, deadline);
  return { status: 200, headers: { ...headers, "content-type": JSON_CONTENT_TYPE }, body };
}

/** The first part already made, then the rest as they are made. */
function* chain(first: Uint8Array, rest: Iterator<Uint8Array, void, undefined>): Generator<Uint8Array, void, undefined> {
  yield first;
  for (let next = rest.next(); next.done !== true; next = rest.next()) yield next.value;
}

/** Rows of a page rendered together when the page is compressed as it renders (about 1 MB of observations). */
const SLICE_ROWS = 1000;
/**
 * Pages of up to this many rows keep their rendered rows in the render
 * cache; bigger ones (downloads, each page seen once) only read it, so that
 * paging through a dataset leaves the rows of small, repeated pages cached.
 */
const CACHED_PAGE_ROWS = SLICE_ROWS;

/**
 * A JSON page in parts made on demand, for {@linkcode compressParts}: a page
 * none of whose rows is cached is rendered {@linkcode SLICE_ROWS} rows at a
 * time into scratch buffers (given back by whoever reads the slices; its rows
 * not cached, as for any big page), so that compressing one slice overlaps
 * rendering the next; a page with cached rows is put together as
 * {@linkcode renderJsonPage} does. The byte limit and the deadline are
 * checked after each slice.
 */
function* jsonPageParts(
  rows: readonly number[],
  writer: RowWriter,
  selection: number,
  settings: Settings,
  head: Uint8Array,
  tail: string,
  deadline: Deadline,
): Generator<Uint8Array, void, undefined> {
  const found = cachedRows(rows, selection, settings, deadline);
  if (found.hits > 0) {
    const body = renderJsonPage(rows, writer, selection, settings, head, tail, deadline, found);
    yield* body instanceof Uint8Array ? [body] : body;
    return;
  }
  const end = encoder.encode(tail);
  let total = 0;
  for (let from = 0; from < rows.length; from += SLICE_ROWS) {
    const to = Math.min(rows.length, from + SLICE_ROWS);
    const scratch = settings.scratch.take();
    const { block } = writer.jsonBytes(rows.slice(from, to), from === 0 ? head : COMMA_BYTES, to === rows.length ? end : EMPTY, scratch);
    // Rows that did not fit were written elsewhere: the scratch buffer goes back at once.
    if (block.buffer !== scratch.buffer) settings.scratch.give(scratch);
    total += block.length;
    try {
      if (total > settings.maxBytes) throw tooLarge(settings.maxBytes);
      deadline.check();
    } catch (error) {
      settings.scratch.give(block);
      throw error;
    }
    yield block;
  }
}

/** `Collection(key)`: a key in parentheses, quoted or not. */
const ENTITY_KEY = /^([A-Za-z]+)\((.+)\)$/;

/**
 * Answers one entity by its key (OData 4.01 §4.3.1): the object itself with
 * `@odata.context` `…$metadata#Locations/$entity`, `$select` honoured; 404
 * when no entity has the key. The key is an integer, or a UUID for `Metadata`.
 */
function answerEntity(
  store: WaterStore,
  collection: CollectionSchema,
  rawKey: string,
  request: HttpRequest,
  deadline: Deadline,
  settings: Settings,
  root: { readonly origin: string; readonly base: string },
): HttpResponse {
  const key = rawKey.replace(/^'(.*)'$/, "$1");
  const valid = collection.level === "dataset" ? /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(key) : /^[0-9]{1,15}$/.test(key);
  if (!valid) {
    const expected = collection.level === "dataset" ? "a UUID" : "an integer";
    throw new WaterError("ERR_WATER_NOT_FOUND", `Cannot find ${collection.name}(${rawKey}): its key is ${expected}`, { target: collection.name });
  }
  const options = readQueryOptions(parseQuery(request.query));
  const query = readQuery(collection, { ...options, filter: `Id eq ${collection.level === "dataset" ? key.toLowerCase() : key}` }, deadline, settings.filters);
  const { writer, id } = settings.writers.get(collection, options.select);
  const page = queryPage(store, query, undefined, 1);
  if (page.rows.length === 0) {
    throw new WaterError("ERR_WATER_NOT_FOUND", `Cannot find ${collection.name}(${rawKey}): no such entity`, { target: collection.name });
  }
  // The row as it renders for a page (`{"Id":…}`, cached alike), with the context spliced in after its brace.
  const rendered = renderJsonPage(page.rows, writer, id, settings, new Uint8Array(0), "", deadline);
  const row = rendered instanceof Uint8Array ? rendered : Buffer.concat(rendered);
  const context = `${contextUrl(root, collection, options.select)}/$entity`;
  const head = encoder.encode(`{"@odata.context":${JSON.stringify(context)},`);
  return { status: 200, headers: { ...ODATA_HEADERS, "content-type": JSON_CONTENT_TYPE }, body: [head, row.subarray(1)] };
}

/**
 * The `@odata.context` of a collection answer (OData 4.01 §10.2, §10.9):
 * `<service>/$metadata#Locations`, or `#Locations(Id,Name)` with `$select`.
 */
function contextUrl(root: { readonly origin: string; readonly base: string }, collection: CollectionSchema, select: readonly string[] | undefined): string {
  return `${root.origin}${root.base}/$metadata#${collection.name}${select === undefined ? "" : `(${select.join(",")})`}`;
}
const COMMA = 0x2c;
const COMMA_BYTES = Uint8Array.of(COMMA);
const EMPTY = new Uint8Array(0);
/** Runs sent as separate parts before joining them is cheaper. */
const MAX_PARTS = 4;

/**
 * Renders a JSON page from cached or freshly rendered rows, refusing one
 * above the byte limit. A page none of whose rows is cached (a client
 * downloading a dataset sees each page once) is rendered as one block,
 * head and tail included, and sent as it is. Otherwise rows missing from
 * the cache are rendered in runs into one block, comma-separated, and
 * cached as views into it; rows that are neighbours in a block are then
 * copied in one go, so a page of consecutive rows (a location's, say)
 * costs one copy.
 */
function renderJsonPage(
  rows: readonly number[],
  writer: RowWriter,
  selection: number,
  settings: Settings,
  head: Uint8Array,
  tail: string,
  deadline: Deadline,
  found: CachedRows = cachedRows(rows, selection, settings, deadline),
): Uint8Array | Uint8Array[] {
  const caching = settings.cache.maxBytes > 0;
  const { views, hits } = found;
  const end = encoder.encode(tail);
  // A big page (a download, seen once) reads cached rows but adds none: it would push out the rows small pages come back for.
  const keeping = caching && rows.length <= CACHED_PAGE_ROWS;
  if (hits === 0) {
    const { block, starts, ends } = writer.jsonBytes(rows, head, end);
    if (block.length > settings.maxBytes) throw tooLarge(settings.maxBytes);
    if (keeping) {
      for (let k = 0; k < rows.length; k++) settings.cache.set(renderKey(selection, rows[k]!), { block, start: starts[k]!, end: ends[k]! });
    }
    return block;
  }
  let missing: number[] = [];
  const flush = (): void => {
    if (missing.length === 0) return;
    renderRun(missing, rows, views, writer, selection, keeping ? settings.cache : undefined);
    missing = [];
  };
  for (let i = 0; i < rows.length; i++) {
    if (views[i] === undefined) {
      missing.push(i);
    } else {
      flush();
    }
  }
  flush();
  // Merge neighbours: a row that starts one comma after the previous one ends,
  // in the same block, extends the run.
  const runs: Uint8Array[] = [];
  let total = head.length;
  let block: Uint8Array | undefined;
  let from = 0;
  let to = 0;
  for (const view of views) {
    if (view.block === block && view.start === to + 1) {
      to = view.end;
      continue;
    }
    if (block !== undefined) runs.push(block.subarray(from, to));
    block = view.block;
    from = view.start;
    to = view.end;
  }
  if (block !== undefined) runs.push(block.subarray(from, to));
  for (const part of runs) total += part.length + 1;
  total += end.length - (runs.length > 0 ? 1 : 0);
  if (total > settings.maxBytes) throw tooLarge(settings.maxBytes);
  if (runs.length <= MAX_PARTS) {
    // Few runs (a page of consecutive rows is one): send them as they are.
    const parts: Uint8Array[] = [head];
    runs.forEach((part, i) => {
      if (i > 0) parts.push(COMMA_BYTES);
      parts.push(part);
    });
    parts.push(end);
    return parts;
  }
  const out = new Uint8Array(total);
  out.set(head);
  let at = head.length;
  for (let i = 0; i < runs.length; i++) {
    if (i > 0) out[at++] = COMMA;
    out.set(runs[i]!, at);
    at += runs[i]!.length;
  }
  out.set(end, at);
  return [out];
}

/** The rows of a page found in the render cache: a view for each (undefined where missing; read only when `hits` > 0), and how many. */
interface CachedRows {
  readonly views: RenderedRow[];
  readonly hits: number;
}

/** No row found: nothing reads the views then. */
const NONE_CACHED: CachedRows = { views: [], hits: 0 };

/**
 * Looks a page's rows up in the render cache (none when it is off), checking
 * the deadline as it goes. The views are made on the first row found: a cold
 * page (a download's, most often) allocates nothing here.
 */
function cachedRows(rows: readonly number[], selection: number, settings: Settings, deadline: Deadline): CachedRows {
  if (settings.cache.maxBytes <= 0) return NONE_CACHED;
  let views: RenderedRow[] | undefined;
  let hits = 0;
  for (let i = 0; i < rows.length; i++) {
    const cached = settings.cache.get(renderKey(selection, rows[i]!));
    if (cached !== undefined) {
      (views ??= new Array(rows.length))[i] = cached;
      hits++;
    }
    if ((i & 1023) === 1023) deadline.check();
  }
  return views === undefined ? NONE_CACHED : { views, hits };
}

/** Renders rows `rows[indexes[..]]` into one comma-separated block, a view per row (kept in the cache, when given). */
function renderRun(
  indexes: readonly number[],
  rows: readonly number[],
  views: RenderedRow[],
  writer: RowWriter,
  selection: number,
  cache: RenderCache | undefined,
): void {
  // The run's rows straight into one block of bytes, comma-separated, each row a view into it.
  const { block, starts, ends } = writer.jsonBytes(indexes.map((i) => rows[i]!));
  for (let k = 0; k < indexes.length; k++) {
    const view: RenderedRow = { block, start: starts[k]!, end: ends[k]! };
    views[indexes[k]!] = view;
    cache?.set(renderKey(selection, rows[indexes[k]!]!), view);
  }
}

function streamCsv(
  store: WaterStore,
  query: CollectionQuery,
  writer: RowWriter,
  options: QueryOptions,
  deadline: Deadline,
  settings: Settings,
): HttpResponse {
  // The deadline bounds the search for the first rows, before any byte is
  // sent; after that the download runs at the client's pace.
  let started = false;
  const guarded: CollectionQuery = {
    ...query,
    checkpoint: () => {
      if (!started) deadline.check();
    },
  };
  const token = options.skipToken;
  const level = query.collection.level;
  const from = token === undefined || level === "dataset" ? 0 : rowAfterToken(store, level, token);
  let skip = options.skip ?? 0;
  /** A batch without the rows `$skip` still passes over. */
  const skipped = <T extends { readonly length: number; slice(from: number): T }>(rows: T): T => {
    if (skip === 0) return rows;
    const dropped = Math.min(skip, rows.length);
    skip -= dropped;
    return rows.slice(dropped);
  };
  async function* chunks(): AsyncGenerator<string> {
    if (options.orderBy !== undefined) {
      const ordered = orderedPage(store, guarded, options.orderBy, token, skip, Infinity, settings.ranks);
      started = true;
      yield writer.csvHeader();
      for (let at = 0; at < ordered.rows.length; at += CSV_BATCH) yield writer.csv(ordered.rows.slice(at, at + CSV_BATCH));
      return;
    }
    if (query.collection.level === "observation") {
      const batches = observationBatches(store, guarded, from, CSV_BATCH);
      // The first rows past $skip, with the header: the deadline bounds the search for them.
      let first = batches.next();
      let rows = first.done === true ? [] : skipped(first.value);
      while (first.done !== true && rows.length === 0) {
        first = batches.next();
        rows = first.done === true ? [] : skipped(first.value);
      }
      started = true;
      yield writer.csvHeader() + (rows.length === 0 ? "" : writer.csv(rows));
      for (const batch of batches) yield writer.csv(skipped(batch));
      return;
    }
    const page = queryPage(store, guarded, token, store.locationCount + store.datasetCount + 1);
    started = true;
    yield writer.csvHeader() + writer.csv(skipped(page.rows));
  }
  return {
    status: 200,
    headers: { ...ODATA_HEADERS, "content-type": "text/csv; charset=utf-8" },
    body: chunks(),
  };
}

function prefersCsv(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const types = accept.toLowerCase().split(",").map((part) => part.split(";")[0]!.trim());
  return types[0] === "text/csv";
}

function idOf(store: WaterStore, collection: CollectionSchema, row: number): string | number {
  return collection.level === "dataset" ? store.datasets[row]!.id : store.idOf(collection.level, row);
}

function tooLarge(maxBytes: number): WaterError {
  return new WaterError(
    "ERR_WATER_RESPONSE_TOO_LARGE",
    `Cannot send the result: it is larger than ${maxBytes} bytes; lower $top or select fewer fields`,
  );
}

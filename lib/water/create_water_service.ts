import {
  type ApiKey,
  authenticateApiKey,
  createDeadline,
  createRouter,
  type Deadline,
  type Handler,
  type HttpRequest,
  type HttpResponse,
  JSON_CONTENT_TYPE,
  jsonResponse,
  parseQuery,
  RateLimiter,
  withCors,
  withRateLimit,
} from "../http/mod.ts";
import { buildNextLink, type QueryOptions, readQueryOptions } from "../odata/mod.ts";
import { WaterError } from "./errors.ts";
import { type CollectionName, type CollectionSchema, COLLECTIONS } from "./fields.ts";
import {
  type CollectionQuery,
  observationBatches,
  prepareFilter,
  queryCount,
  queryPage,
  readRowToken,
} from "./query_collection.ts";
import { createRowWriter, type RowWriter, selectFields } from "./render_rows.ts";
import { metadataDocument, serviceDocument } from "./service_document.ts";
import type { WaterStore } from "./store.ts";

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
   * Requests per key in flight at once; 0 turns the limit off.
   * @default {1}
   */
  maxConcurrent?: number;
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
}

const encoder = new TextEncoder();
const RENDER_SLICE = 1000;
const CSV_BATCH = 2048;

/**
 * Creates the water-data query API: `GET` on the service root, `$metadata`,
 * `/Metadata`, `/Locations`, `/Observations`, `/Records` and their `/$count`,
 * behind API-key authentication, per-key rate limits and CORS. Answers JSON
 * pages with `@odata.nextLink` and `Link`, counts, and CSV streams.
 * @param store the loaded store
 * @param options keys, clock and limits
 * @returns the handler
 * @example
 * ```ts
 * const handler = createWaterService(store, { keys: indexApiKeys([parseApiKey("demo", "secret")]), now: () => performance.now() });
 * ```
 */
export function createWaterService(store: WaterStore, options: WaterServiceOptions): Handler {
  const base = options.basePath ?? "/v1/odata/v4";
  const settings = {
    timeout: options.queryTimeoutMs ?? 30_000,
    maxBytes: options.maxResponseBytes ?? 32 * 1024 * 1024,
    defaultTop: options.defaultTop ?? 1000,
  };
  const origin = (request: HttpRequest): string => request.origin;
  const router = createRouter([
    {
      method: "GET",
      path: base,
      handler: (request) => jsonResponse(200, serviceDocument(`${origin(request)}${base}`), ODATA_HEADERS),
    },
    {
      method: "GET",
      path: `${base}/$metadata`,
      handler: () => ({
        status: 200,
        headers: { "content-type": "application/xml; charset=utf-8", ...ODATA_HEADERS },
        body: metadataDocument(),
      }),
    },
    {
      method: "GET",
      path: `${base}/:collection`,
      handler: (request, params) => {
        const collection = collectionOf(params["collection"]!);
        const deadline = createDeadline(settings.timeout, options.now);
        return answerQuery(store, collection, request, deadline, settings, { origin: origin(request), base });
      },
    },
    {
      method: "GET",
      path: `${base}/:collection/$count`,
      handler: (request, params) => {
        const collection = collectionOf(params["collection"]!);
        const deadline = createDeadline(settings.timeout, options.now);
        const query = readQuery(collection, readQueryOptions(parseQuery(request.query)), deadline);
        return {
          status: 200,
          headers: { "content-type": "text/plain; charset=utf-8", ...ODATA_HEADERS },
          body: String(queryCount(store, query)),
        };
      },
    },
  ]);
  const limiter = new RateLimiter({
    ratePerSecond: options.ratePerSecond ?? 2,
    maxConcurrent: options.maxConcurrent ?? 1,
    now: options.now,
  });
  const keylessOrigins = new Set(options.corsOrigins ?? []);
  const identify = (request: HttpRequest): string => {
    const identity = authenticateApiKey(request, { keys: options.keys, keylessOrigins });
    return `${identity.kind}:${identity.id}`;
  };
  return withCors(withRateLimit(router, limiter, identify), {
    origins: options.corsOrigins ?? [],
    methods: ["GET", "HEAD"],
    exposeHeaders: ["link", "retry-after", "odata-version"],
  });
}

const ODATA_HEADERS = { "odata-version": "4.0" } as const;

function collectionOf(name: string): CollectionSchema {
  const collection = COLLECTIONS.get(name as CollectionName);
  if (collection === undefined) {
    throw new WaterError(
      "ERR_WATER_NOT_FOUND",
      `Cannot find collection "${name}": use Metadata, Locations, Observations or Records`,
      { target: name },
    );
  }
  return collection;
}

function readQuery(collection: CollectionSchema, options: QueryOptions, deadline: Deadline): CollectionQuery {
  return {
    collection,
    ...(options.filter === undefined ? {} : { filter: prepareFilter(collection, options.filter) }),
    checkpoint: deadline.check,
  };
}

interface Settings {
  readonly timeout: number;
  readonly maxBytes: number;
  readonly defaultTop: number;
}

function answerQuery(
  store: WaterStore,
  collection: CollectionSchema,
  request: HttpRequest,
  deadline: Deadline,
  settings: Settings,
  root: { readonly origin: string; readonly base: string },
): HttpResponse {
  const options = readQueryOptions(parseQuery(request.query));
  const query = readQuery(collection, options, deadline);
  if (options.count) {
    const n = queryCount(store, query);
    return jsonResponse(200, { "@odata.count": n, value: n }, ODATA_HEADERS);
  }
  const writer = createRowWriter(store, collection, selectFields(collection, options.select));
  const format = options.format ?? (prefersCsv(request.headers["accept"]) ? "csv" : "json");
  if (format === "csv" && options.top === undefined) return streamCsv(store, query, writer, options, deadline);
  const top = options.top ?? settings.defaultTop;
  const page = queryPage(store, query, options.skipToken, top);
  deadline.check();
  const last = page.rows[page.rows.length - 1];
  const link = page.more && last !== undefined
    ? buildNextLink({
      origin: root.origin,
      path: `${root.base}/${collection.name}`,
      ...(options.filter === undefined ? {} : { filter: options.filter }),
      ...(options.select === undefined ? {} : { select: options.select }),
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
  let body = "{\"value\":[";
  for (let i = 0; i < page.rows.length; i += RENDER_SLICE) {
    if (i > 0) body += ",";
    body += writer.json(page.rows.slice(i, i + RENDER_SLICE));
    if (body.length > settings.maxBytes) throw tooLarge(settings.maxBytes);
    deadline.check();
  }
  body += "]";
  if (link !== undefined) body += `,"@odata.nextLink":${JSON.stringify(link)}`;
  body += "}";
  const bytes = encoder.encode(body);
  if (bytes.length > settings.maxBytes) throw tooLarge(settings.maxBytes);
  return { status: 200, headers: { ...headers, "content-type": JSON_CONTENT_TYPE }, body: bytes };
}

function streamCsv(
  store: WaterStore,
  query: CollectionQuery,
  writer: RowWriter,
  options: QueryOptions,
  deadline: Deadline,
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
  const from = token === undefined || query.collection.level === "dataset" ? 0 : readRowToken(token);
  async function* chunks(): AsyncGenerator<string> {
    if (query.collection.level === "observation") {
      const batches = observationBatches(store, guarded, from, CSV_BATCH);
      const first = batches.next();
      started = true;
      yield writer.csvHeader() + (first.done === true ? "" : writer.csv(first.value));
      for (const batch of batches) yield writer.csv(batch);
      return;
    }
    const page = queryPage(store, guarded, token, store.locationCount + store.datasetCount + 1);
    started = true;
    yield writer.csvHeader() + writer.csv(page.rows);
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
  return collection.level === "dataset" ? store.datasets[row]!.id : row + 1;
}

function tooLarge(maxBytes: number): WaterError {
  return new WaterError(
    "ERR_WATER_RESPONSE_TOO_LARGE",
    `Cannot send the result: it is larger than ${maxBytes} bytes; lower $top or select fewer fields`,
  );
}

import {
  compressParts,
  type ContentCoding,
  JSON_CONTENT_TYPE,
  jsonResponse,
  mergeHeaders,
  parseQuery,
} from "../../http/_internal.ts";
import { type Deadline, type HttpRequest, type HttpResponse } from "../../http/mod.ts";
import {
  type BoundApply,
  buildNextLink,
  ODataError,
  type OrderKey,
  type QueryOptions,
  readQueryOptions,
} from "../../odata/mod.ts";
import { WaterError } from "../errors.ts";
import type { CollectionSchema } from "../fields.ts";
import {
  type CollectionQuery,
  observationBatches,
  orderedPage,
  type PageResult,
  queryCount,
  queryPage,
  rowAfterToken,
} from "../query/query_collection.ts";
import { jsonPageParts, renderJsonPage, SLICE_ROWS } from "../render/render_json_page.ts";
import type { RowWriter } from "../render/render_rows.ts";
import type { WaterStore } from "../store/store.ts";
import { type PageSettings, readQuery } from "./_served_store.ts";
import { aggregatedRows, answerAggregate, readApply } from "./_answer_apply.ts";

/** The headers of every OData answer. */
export const ODATA_HEADERS = { "odata-version": "4.0" } as const;

const CSV_CONTENT_TYPE = "text/csv; charset=utf-8";
const JSON_HEADERS: Readonly<Record<string, string>> = { "content-type": JSON_CONTENT_TYPE };

/** Where the service answers: the request's origin and the service root's path. */
export interface ServiceRoot {
  readonly origin: string;
  readonly base: string;
}

const encoder = new TextEncoder();
const CSV_BATCH = 2048;

/**
 * Answers `/<Collection>/$count`: the count of the rows the filter matches, as plain text.
 * @param store the store
 * @param collection the collection
 * @param request the request, its query options read here
 * @param deadline checked as the rows are counted
 * @param settings the bound filters kept
 * @returns the answer
 */
export function answerCount(
  store: WaterStore,
  collection: CollectionSchema,
  request: HttpRequest,
  deadline: Deadline,
  settings: PageSettings,
): HttpResponse {
  const options = readQueryOptions(parseQuery(request.query));
  const apply = options.apply === undefined
    ? undefined
    : readApply(collection, options.apply, settings.applies);
  const count = apply?.aggregated === true
    ? aggregatedRows(store, collection, apply, options, deadline, settings).order.length
    : queryCount(store, rowQuery(collection, options, apply, deadline, settings));
  return {
    status: 200,
    headers: { "content-type": "text/plain; charset=utf-8", ...ODATA_HEADERS },
    body: String(count),
  };
}

/**
 * The query of a request's rows: its `$filter`, and the filters of an
 * `$apply` that only filters (which selects rows, and answers them as rows).
 */
function rowQuery(
  collection: CollectionSchema,
  options: QueryOptions,
  apply: BoundApply | undefined,
  deadline: Deadline,
  settings: PageSettings,
): CollectionQuery {
  const query = readQuery(collection, options, deadline, settings.filters);
  const filter = apply?.filter;
  if (filter === undefined) return query;
  // A new record, not a spread of `query`, which may lack `filter` (see mergeHeaders).
  return {
    collection,
    filter: query.filter === undefined ? filter : { kind: "and", operands: [filter, query.filter] },
    checkpoint: deadline.check,
  };
}

/** `$orderby` as a next link repeats it. */
function orderByText(keys: readonly OrderKey[]): string {
  return keys.map((key) => `${key.name}${key.descending ? " desc" : ""}`).join(",");
}

/**
 * Answers a collection's page: JSON with `@odata.nextLink` and `Link`, or
 * CSV (`$format=csv` or `Accept: text/csv`; streamed whole without `$top`),
 * or the count with `$count=true`; ordered by `$orderby`, after `$skiptoken`
 * and `$skip`. A big JSON page the client takes compressed is compressed
 * slice by slice as it renders.
 * @param store the store
 * @param collection the collection
 * @param request the request, its query options read here
 * @param deadline checked as the page is found and rendered
 * @param settings the limits and the store's caches
 * @param root the origin and service root, for links and the context
 * @param coding the compression the client takes, if any
 * @returns the answer
 */
export function answerQuery(
  store: WaterStore,
  collection: CollectionSchema,
  request: HttpRequest,
  deadline: Deadline,
  settings: PageSettings,
  root: ServiceRoot,
  coding: ContentCoding | undefined,
): HttpResponse | Promise<HttpResponse> {
  const options = readQueryOptions(parseQuery(request.query));
  const apply = options.apply === undefined
    ? undefined
    : readApply(collection, options.apply, settings.applies);
  if (apply?.aggregated === true) {
    const csv = (options.format ?? (prefersCsv(request.headers["accept"]) ? "csv" : "json")) ===
      "csv";
    return answerAggregate(store, collection, apply, options, csv, deadline, settings, root);
  }
  const query = rowQuery(collection, options, apply, deadline, settings);
  if (options.count) {
    const n = queryCount(store, query);
    return jsonResponse(200, { "@odata.count": n, value: n }, ODATA_HEADERS);
  }
  const { writer, id } = settings.writers.get(collection, options.select);
  const format = options.format ?? (prefersCsv(request.headers["accept"]) ? "csv" : "json");
  if (format === "csv" && options.top === undefined) {
    return streamCsv(store, query, writer, options, deadline, settings);
  }
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
      ...(options.apply === undefined ? {} : { apply: options.apply }),
      ...(options.filter === undefined ? {} : { filter: options.filter }),
      ...(options.select === undefined ? {} : { select: options.select }),
      ...(options.orderBy === undefined ? {} : { orderBy: orderByText(options.orderBy) }),
      top,
      ...(options.format === undefined ? {} : { format: options.format }),
      lastId: idOf(store, collection, last),
    })
    : undefined;
  // Built by assignment, not spread (see mergeHeaders).
  const headers = mergeHeaders(ODATA_HEADERS);
  if (link !== undefined) headers["link"] = `<${link}>; rel="next"`;
  if (format === "csv") {
    headers["content-type"] = CSV_CONTENT_TYPE;
    return {
      status: 200,
      headers,
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
      const json = mergeHeaders(headers, JSON_HEADERS);
      if (first.value.byteLength < settings.compressAbove) {
        return { status: 200, headers: json, body: [first.value, ...parts] };
      }
      return compressParts(chain(first.value, parts), coding, {
        release: (part) => settings.scratch.give(part),
      }).then((body) => ({
        status: 200,
        headers: mergeHeaders(json, { vary: "Accept-Encoding", "content-encoding": coding }),
        body,
      }));
    }
  }
  const body = renderJsonPage(page.rows, writer, id, settings, head, tail, deadline);
  headers["content-type"] = JSON_CONTENT_TYPE;
  return { status: 200, headers, body };
}

/** The first part already made, then the rest as they are made. */
function* chain(
  first: Uint8Array,
  rest: Iterator<Uint8Array, void, undefined>,
): Generator<Uint8Array, void, undefined> {
  yield first;
  for (let next = rest.next(); next.done !== true; next = rest.next()) yield next.value;
}

/**
 * Answers one entity by its key (OData 4.01 §4.3.1): the object itself with
 * `@odata.context` `…$metadata#Locations/$entity`, `$select` honoured; 404
 * when no entity has the key. The key is an integer, or a UUID for `Metadata`.
 * @param store the store
 * @param collection the collection
 * @param rawKey the key as the path gives it, quoted or not
 * @param request the request, its query options read here
 * @param deadline checked as the row is found and rendered
 * @param settings the limits and the store's caches
 * @param root the origin and service root, for the context
 * @returns the answer
 * @throws {WaterError} `ERR_WATER_NOT_FOUND` for a key of the wrong kind or no such entity
 */
export function answerEntity(
  store: WaterStore,
  collection: CollectionSchema,
  rawKey: string,
  request: HttpRequest,
  deadline: Deadline,
  settings: PageSettings,
  root: ServiceRoot,
): HttpResponse {
  const key = rawKey.replace(/^'(.*)'$/, "$1");
  const valid = collection.level === "dataset"
    ? /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/.test(key)
    : /^[0-9]{1,15}$/.test(key);
  if (!valid) {
    const expected = collection.level === "dataset" ? "a UUID" : "an integer";
    throw new WaterError(
      "ERR_WATER_NOT_FOUND",
      `Cannot find ${collection.name}(${rawKey}): its key is ${expected}`,
      { target: collection.name },
    );
  }
  const options = readQueryOptions(parseQuery(request.query));
  if (options.apply !== undefined) {
    throw new ODataError(
      "ERR_ODATA_QUERY_OPTION",
      `Cannot use $apply on one entity: apply it to the collection, /${collection.name}`,
      { target: "$apply" },
    );
  }
  const query = readQuery(
    collection,
    { ...options, filter: `Id eq ${collection.level === "dataset" ? key.toLowerCase() : key}` },
    deadline,
    settings.filters,
  );
  const { writer, id } = settings.writers.get(collection, options.select);
  const page = queryPage(store, query, undefined, 1);
  if (page.rows.length === 0) {
    throw new WaterError(
      "ERR_WATER_NOT_FOUND",
      `Cannot find ${collection.name}(${rawKey}): no such entity`,
      { target: collection.name },
    );
  }
  // The row as it renders for a page (`{"Id":…}`, cached alike), with the context spliced in after its brace.
  const rendered = renderJsonPage(page.rows, writer, id, settings, new Uint8Array(0), "", deadline);
  const row = rendered instanceof Uint8Array ? rendered : Buffer.concat(rendered);
  const context = `${contextUrl(root, collection, options.select)}/$entity`;
  const head = encoder.encode(`{"@odata.context":${JSON.stringify(context)},`);
  return {
    status: 200,
    headers: mergeHeaders(ODATA_HEADERS, JSON_HEADERS),
    body: [head, row.subarray(1)],
  };
}

/**
 * The `@odata.context` of a collection answer (OData 4.01 §10.2, §10.9):
 * `<service>/$metadata#Locations`, or `#Locations(Id,Name)` with `$select`.
 */
function contextUrl(
  root: ServiceRoot,
  collection: CollectionSchema,
  select: readonly string[] | undefined,
): string {
  return `${root.origin}${root.base}/$metadata#${collection.name}${
    select === undefined ? "" : `(${select.join(",")})`
  }`;
}

function streamCsv(
  store: WaterStore,
  query: CollectionQuery,
  writer: RowWriter,
  options: QueryOptions,
  deadline: Deadline,
  settings: PageSettings,
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
      const ordered = orderedPage(
        store,
        guarded,
        options.orderBy,
        token,
        skip,
        Infinity,
        settings.ranks,
      );
      started = true;
      yield writer.csvHeader();
      for (let at = 0; at < ordered.rows.length; at += CSV_BATCH) {
        yield writer.csv(ordered.rows.slice(at, at + CSV_BATCH));
      }
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
    headers: mergeHeaders(ODATA_HEADERS, { "content-type": CSV_CONTENT_TYPE }),
    body: chunks(),
  };
}

function prefersCsv(accept: string | undefined): boolean {
  if (accept === undefined) return false;
  const types = accept.toLowerCase().split(",").map((part) => part.split(";")[0]!.trim());
  return types[0] === "text/csv";
}

function idOf(store: WaterStore, collection: CollectionSchema, row: number): string | number {
  return collection.level === "dataset"
    ? store.datasets[row]!.id
    : store.idOf(collection.level, row);
}

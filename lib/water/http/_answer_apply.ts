import { JSON_CONTENT_TYPE, jsonResponse, mergeHeaders } from "../../http/_internal.ts";
import type { Deadline, HttpResponse } from "../../http/mod.ts";
import {
  applyResultSteps,
  bindFilter,
  type BoundApply,
  type BoundResultStep,
  type FilterSchema,
  ODataError,
  parseFilter,
  type QueryOptions,
} from "../../odata/mod.ts";
import { encodeQueryValue } from "../../odata/_internal.ts";
import { WaterError } from "../errors.ts";
import type { CollectionSchema } from "../fields.ts";
import {
  cellOf,
  type GroupedColumn,
  type GroupedColumns,
  groupedRows,
} from "../query/grouped_columns.ts";
import { aggregateQueryColumns, prepareApply } from "../query/query_apply.ts";
import { formatCsvRow } from "../render/format_csv.ts";
import { neverKept } from "../render/compressed_pages.ts";
import { renderGroupedJson } from "../render/render_grouped_json.ts";
import { keptFor, type PageSettings } from "./_served_store.ts";

/** Bound `$apply`s kept, by collection and text, so that paging through a result binds it once. */
const MAX_APPLIES = 512;

/**
 * A request's `$apply` for a collection, bound once and kept (the oldest
 * let go of past {@linkcode MAX_APPLIES}).
 * @param collection the collection
 * @param text the `$apply` text
 * @param applies the bound `$apply`s kept
 * @returns the bound `$apply`
 * @throws {ApplySyntaxError} or {ODataError} for a bad `$apply`
 */
export function readApply(
  collection: CollectionSchema,
  text: string,
  applies: Map<string, BoundApply>,
): BoundApply {
  return keptFor(
    applies,
    `${collection.name}\n${text}`,
    MAX_APPLIES,
    () => prepareApply(collection, text),
  );
}

/** Where the answer's links point: the request's origin and the service root's path. */
export interface ApplyRoot {
  readonly origin: string;
  readonly base: string;
}

/**
 * The result of an aggregating `$apply` after the request's options: the
 * columns of its rows (each the values of `apply.shape`), and which rows,
 * in order.
 */
export interface AggregatedResult {
  readonly columns: readonly GroupedColumn[];
  readonly order: Uint32Array;
}

/**
 * The rows of an aggregating `$apply`, after the request's `$filter`,
 * `$orderby` and `$skip` (which act on the aggregated rows, as OData says:
 * `$apply` first, then the other options). Without steps after the
 * grouping and without `$filter` or `$orderby`, the groups are answered in
 * their kept order, as columns; otherwise the rows through
 * `applyResultSteps`, that result kept too (by collection, `$apply`,
 * `$filter` and `$orderby`), so that each page of it is cut from rows
 * aggregated and sorted once.
 * @param store the store
 * @param collection the collection
 * @param apply the bound, aggregating `$apply`
 * @param options the request's options
 * @param deadline checked as the rows are read
 * @param settings the group limit and the aggregated rows kept
 * @returns the rows' columns and their order
 * @throws {ODataError} for a `$filter`, `$orderby` or `$skiptoken` the aggregated rows cannot take
 */
export function aggregatedRows(
  store: Parameters<typeof aggregateQueryColumns>[0],
  collection: CollectionSchema,
  apply: BoundApply,
  options: QueryOptions,
  deadline: Deadline,
  settings: PageSettings,
): AggregatedResult {
  if (options.skipToken !== undefined) {
    throw new ODataError(
      "ERR_ODATA_QUERY_OPTION",
      "Cannot use $skiptoken with an aggregating $apply: its rows have no Id; page with $skip, as @odata.nextLink does",
      { target: "$skiptoken" },
    );
  }
  const key = `${collection.name}\n${options.apply}`;
  const aggregated = (): GroupedColumns =>
    settings.aggregates.get(
      key,
      () =>
        aggregateQueryColumns(store, {
          collection,
          apply,
          checkpoint: deadline.check,
          maxGroups: settings.maxGroups,
        }),
    );
  if (apply.steps.length === 0 && options.filter === undefined && options.orderBy === undefined) {
    const groups = aggregated();
    deadline.check();
    return { columns: groups.columns, order: groups.order };
  }
  // A JSON array: never the key of aggregated groups (which starts with a letter), nor of another query's.
  const orderBy = options.orderBy?.map((k) => `${k.name}${k.descending ? " desc" : ""}`).join(",");
  const ordered = JSON.stringify([collection.name, options.apply, options.filter, orderBy]);
  const result = settings.aggregates.get(ordered, () => {
    const schema: FilterSchema = new Map(apply.shape.map((p) => [p.name, { type: p.type }]));
    const extra: BoundResultStep[] = [];
    if (options.filter !== undefined) {
      extra.push({ kind: "filter", filter: bindFilter(parseFilter(options.filter), schema) });
    }
    if (options.orderBy !== undefined) {
      for (const k of options.orderBy) checkName(schema, k.name, "$orderby");
      extra.push({ kind: "orderby", keys: options.orderBy });
    }
    const groups = aggregated();
    deadline.check();
    const rows = applyResultSteps(groupedRows(groups, groups.order), apply, extra);
    const columns: GroupedColumn[] = apply.shape.map((_, c) => ({
      kind: "values",
      values: rows.map((row) => row[c]!),
    }));
    const order = new Uint32Array(rows.length);
    for (let i = 0; i < order.length; i++) order[i] = i;
    // Kept as groups with no grouping columns, in their final order.
    return { count: rows.length, keys: 0, columns, order };
  });
  return { columns: result.columns, order: result.order };
}

/**
 * Answers a collection's page under an aggregating `$apply`: JSON with
 * `@odata.context` naming the aggregated properties
 * (`$metadata#Observations(LocationId,Mean)`), rows with `"@odata.id":
 * null` (they are not entities of the set), and `@odata.nextLink` (the same
 * request with `$skip` past the page); or CSV; or the count with
 * `$count=true`. Every page is cut from the same order: the `$apply`'s, or
 * the grouping properties ascending, then `$orderby`.
 * @param store the store
 * @param collection the collection
 * @param apply the bound, aggregating `$apply`
 * @param options the request's options
 * @param csv whether to answer CSV
 * @param deadline checked as the rows are read
 * @param settings the limits
 * @param root the origin and service root, for links and the context
 * @returns the answer
 * @throws {WaterError} `ERR_WATER_RESPONSE_TOO_LARGE` past the byte limit
 */
export function answerAggregate(
  store: Parameters<typeof aggregateQueryColumns>[0],
  collection: CollectionSchema,
  apply: BoundApply,
  options: QueryOptions,
  csv: boolean,
  deadline: Deadline,
  settings: PageSettings,
  root: ApplyRoot,
): HttpResponse {
  const schema: FilterSchema = new Map(apply.shape.map((p) => [p.name, { type: p.type }]));
  const names = options.select ?? apply.shape.map((p) => p.name);
  for (const name of names) checkName(schema, name, "$select");
  const result = aggregatedRows(store, collection, apply, options, deadline, settings);
  const length = result.order.length;
  if (options.count) {
    return jsonResponse(200, { "@odata.count": length, value: length }, HEADERS);
  }
  const skip = options.skip ?? 0;
  const top = options.top ?? (csv ? Infinity : settings.defaultTop);
  const page = result.order.subarray(Math.min(skip, length), Math.min(skip + top, length));
  const more = length > skip + top;
  const index = new Map(apply.shape.map((p, i) => [p.name, i]));
  const properties = names.map((name) => ({
    name,
    column: result.columns[index.get(name)!]!,
    datetime: schema.get(name)!.type === "datetime",
  }));
  // Built by assignment, not spread (see mergeHeaders).
  const headers = mergeHeaders(HEADERS);
  const link = more ? nextLink(collection, options, root, top, skip + top) : undefined;
  if (link !== undefined) headers["link"] = `<${link}>; rel="next"`;
  if (csv) {
    let body = formatCsvRow(names);
    for (const g of page) {
      body += formatCsvRow(properties.map((p) => {
        const v = cellOf(p.column, g);
        return p.datetime && typeof v === "number" ? new Date(v).toISOString() : v;
      }));
    }
    checkSize(body, settings.maxBytes);
    headers["content-type"] = "text/csv; charset=utf-8";
    return { status: 200, headers, body };
  }
  const body = renderGroupedJson({
    context: `${root.origin}${root.base}/$metadata#${collection.name}(${names.join(",")})`,
    properties,
    groups: page,
    ...(link === undefined ? {} : { nextLink: link }),
  });
  if (body.byteLength > settings.maxBytes) throw tooLarge(settings.maxBytes);
  headers["content-type"] = JSON_CONTENT_TYPE;
  // Bytes, so that they leave without being encoded again; made anew for every request, like the CSV.
  return neverKept({ status: 200, headers, body });
}

const HEADERS = { "odata-version": "4.0" } as const;

/** Refuses an answer above the byte limit, counted in UTF-8 bytes (a UTF-16 unit is at most 3). */
function checkSize(body: string, maxBytes: number): void {
  if (body.length * 3 <= maxBytes || Buffer.byteLength(body) <= maxBytes) return;
  throw tooLarge(maxBytes);
}

function tooLarge(maxBytes: number): WaterError {
  return new WaterError(
    "ERR_WATER_RESPONSE_TOO_LARGE",
    `Cannot send the result: it is larger than ${maxBytes} bytes; lower $top or select fewer fields`,
  );
}

function checkName(schema: FilterSchema, name: string, option: string): void {
  if (!schema.has(name)) {
    throw new ODataError(
      "ERR_ODATA_UNKNOWN_FIELD",
      `Cannot use "${name}" in ${option}: the aggregated rows have ${
        [...schema.keys()].join(", ")
      }`,
      { target: name },
    );
  }
}

/** The same request, with `$skip` past the page. */
function nextLink(
  collection: CollectionSchema,
  options: QueryOptions,
  root: ApplyRoot,
  top: number,
  skip: number,
): string {
  const parts = [`$apply=${encodeQueryValue(options.apply!)}`];
  if (options.filter !== undefined) parts.push(`$filter=${encodeQueryValue(options.filter)}`);
  if (options.select !== undefined) {
    parts.push(`$select=${encodeQueryValue(options.select.join(","))}`);
  }
  if (options.orderBy !== undefined) {
    const text = options.orderBy.map((key) => `${key.name}${key.descending ? " desc" : ""}`);
    parts.push(`$orderby=${encodeQueryValue(text.join(","))}`);
  }
  parts.push(`$top=${top}`);
  if (options.format !== undefined) parts.push(`$format=${options.format}`);
  parts.push(`$skip=${skip}`);
  return `${root.origin}${root.base}/${collection.name}?${parts.join("&")}`;
}

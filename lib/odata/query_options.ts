import { ODataError } from "./errors.ts";

/** A decoded `name=value` pair of the query string. */
export interface QueryPair {
  readonly name: string;
  readonly value: string;
}

/** The system query options of one request, validated but not yet bound to a collection. */
export interface QueryOptions {
  /** `$filter` text, unparsed. */
  readonly filter?: string;
  /** `$select` names, trimmed, in the order given, without duplicates. */
  readonly select?: readonly string[];
  /** `$top`, if given. */
  readonly top?: number;
  /** `$skip`: matching rows to pass over before the page (after `$skiptoken`), if given. */
  readonly skip?: number;
  /** `$orderby` keys, when they ask for another order than ascending `Id` (which is the default). */
  readonly orderBy?: readonly OrderKey[];
  /** The id after `Id:` in `$skiptoken`. */
  readonly skipToken?: string;
  /** `$count=true`. */
  readonly count: boolean;
  /** `$format`, if given. */
  readonly format?: "json" | "csv";
  /** `$apply` text, unparsed: the other options then act on its result. */
  readonly apply?: string;
}

/** One key of `$orderby`: a field name and its direction. */
export interface OrderKey {
  readonly name: string;
  readonly descending: boolean;
}

/** Options of {@linkcode readQueryOptions}. */
export interface ReadQueryOptionsOptions {
  /**
   * Largest accepted `$top`.
   * @default {10000}
   */
  maxTop?: number;
}

/** `$skip` at most: passing over rows costs each of them, so a client pages deep with `$skiptoken`. */
const MAX_SKIP = 1_000_000;

/** `$top` at most, unless the caller says otherwise. */
const DEFAULT_MAX_TOP = 10_000;

/** A system query option {@linkcode readQueryOptions} reads, as documents describe it. */
export interface QueryOptionInfo {
  /** Its name, e.g. `$filter` (names are case-insensitive and the `$` may be left out). */
  readonly name: string;
  readonly description: string;
  /** A JSON Schema of its value, with the limits {@linkcode readQueryOptions} holds it to. */
  readonly schema: Readonly<Record<string, unknown>>;
}

/**
 * The system query options {@linkcode readQueryOptions} reads, with the
 * limits it holds each to: the one list that both the reader and the
 * OpenAPI document come from.
 * @param options the `$top` limit, as given to {@linkcode readQueryOptions}
 * @returns the options, in the order the reader's messages name them
 */
export function describeQueryOptions(
  options: ReadQueryOptionsOptions = {},
): readonly QueryOptionInfo[] {
  const maxTop = options.maxTop ?? DEFAULT_MAX_TOP;
  return [
    {
      name: "$filter",
      description: "A filter expression (OData 4.01 URL conventions §5.1.1)",
      schema: { type: "string" },
    },
    {
      name: "$select",
      description: "The fields to answer with, comma-separated (spaces trimmed); all by default",
      schema: { type: "string", pattern: "^[^,]+(,[^,]+)*$" },
    },
    {
      name: "$top",
      description: `Rows at most, 1 to ${maxTop}`,
      schema: { type: "integer", minimum: 1, maximum: maxTop },
    },
    {
      name: "$skiptoken",
      description: "Where the page starts: `Id:<id>`, as the previous page's next link gives it",
      schema: { type: "string", pattern: "^\\s*Id:.+$" },
    },
    {
      name: "$count",
      description: "`true` answers the number of matching rows instead of the rows",
      schema: { type: "boolean" },
    },
    {
      name: "$format",
      description: "`json` (the default) or `csv`",
      schema: { type: "string", enum: ["json", "csv", "application/json", "text/csv"] },
    },
    {
      name: "$orderby",
      description:
        "Fields to order by, comma-separated, each optionally followed by `asc` or `desc`; `Id` ascending by default",
      schema: { type: "string" },
    },
    {
      name: "$skip",
      description:
        `Matching rows to pass over before the page (after \`$skiptoken\`), 0 to ${MAX_SKIP}`,
      schema: { type: "integer", minimum: 0, maximum: MAX_SKIP },
    },
    {
      name: "$apply",
      description:
        "Transformations (OData Data Aggregation 4.0), chained with `/`: `filter`, `compute`, `groupby`, `aggregate`, " +
        "`orderby`, `top`, `skip`, `topcount`, `bottomcount`; the other options then act on the aggregated rows",
      schema: { type: "string" },
    },
  ];
}

const KNOWN = new Set(describeQueryOptions().map((option) => option.name.slice(1)));
const UNSUPPORTED = new Set([
  "expand",
  "search",
  "compute",
  "levels",
  "index",
  "schemaversion",
]);

/**
 * Reads the system query options from decoded query pairs, following OData
 * 4.01: names are case-insensitive and the `$` may be left out. Empty options
 * are ignored, as DataStream's clients send some empty; so is
 * `$filter=undefined`, which the official JavaScript client sends for an
 * unfiltered call (the real API answers it unfiltered). Custom options
 * (names without `$` that are not system options) are ignored. `$orderby`
 * lists keys (`Field [asc|desc]`); `Id` or `Id asc` alone is the default order.
 * @param pairs the decoded query string
 * @param options `$top` limit
 * @returns the options
 * @throws {ODataError} `ERR_ODATA_QUERY_OPTION` naming the option in `target`: a
 * repeated option, an unknown `$` option, `$top` outside 1..maxTop, a
 * malformed `$skiptoken`, `$count` or `$format`, an empty `$select` entry, or
 * an unsupported option
 * @example
 * ```ts
 * const options = readQueryOptions(parseQuery("$filter=Id gt 3&$top=10&$select=Id,Name"));
 * options.top; // 10
 * ```
 */
export function readQueryOptions(
  pairs: readonly QueryPair[],
  options: ReadQueryOptionsOptions = {},
): QueryOptions {
  const maxTop = options.maxTop ?? DEFAULT_MAX_TOP;
  const seen = new Map<string, string>();
  for (const pair of pairs) {
    const dollar = pair.name.startsWith("$");
    const key = (dollar ? pair.name.slice(1) : pair.name).toLowerCase();
    if (pair.value === "") continue;
    if (!KNOWN.has(key)) {
      if (UNSUPPORTED.has(key)) {
        throw optionError(`$${key}`, `Cannot use $${key}: the service does not support it`);
      }
      if (dollar) {
        throw optionError(
          pair.name,
          `Cannot use unknown query option "${pair.name}": use $filter, $select, $top, $skiptoken, $count or $format`,
        );
      }
      continue;
    }
    if (seen.has(key)) {
      throw optionError(`$${key}`, `Cannot use $${key} more than once in a request`);
    }
    seen.set(key, pair.value);
  }
  // The official JavaScript client sends the literal `$filter=undefined` for an unfiltered call; the real API reads it as no filter.
  const filter = seen.get("filter")?.trim() === "undefined" ? undefined : seen.get("filter");
  const select = seen.get("select");
  const top = seen.get("top");
  const skipToken = seen.get("skiptoken");
  const count = seen.get("count");
  const format = seen.get("format");
  const orderText = seen.get("orderby");
  const orderBy = orderText === undefined ? undefined : readOrderBy(orderText);
  const skip = seen.get("skip");
  const apply = seen.get("apply");
  return {
    ...(filter === undefined ? {} : { filter }),
    ...(select === undefined ? {} : { select: readSelect(select) }),
    ...(top === undefined ? {} : { top: readTop(top, maxTop) }),
    ...(skip === undefined ? {} : { skip: readSkip(skip) }),
    ...(orderBy === undefined ? {} : { orderBy }),
    ...(skipToken === undefined ? {} : { skipToken: readSkipToken(skipToken) }),
    count: count === undefined ? false : readCount(count),
    ...(format === undefined ? {} : { format: readFormat(format) }),
    ...(apply === undefined ? {} : { apply }),
  };
}

function optionError(target: string, message: string): ODataError {
  return new ODataError("ERR_ODATA_QUERY_OPTION", message, { target });
}

function readSelect(text: string): readonly string[] {
  const names: string[] = [];
  for (const part of text.split(",")) {
    const name = part.trim();
    if (name === "") {
      throw optionError("$select", `Cannot read $select "${text}": it has an empty field name`);
    }
    if (!names.includes(name)) names.push(name);
  }
  return names;
}

function readTop(text: string, maxTop: number): number {
  const trimmed = text.trim();
  const value = /^[0-9]+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!Number.isSafeInteger(value) || value < 1 || value > maxTop) {
    throw optionError("$top", `Cannot use $top=${text}: it must be an integer from 1 to ${maxTop}`);
  }
  return value;
}

function readSkip(text: string): number {
  const trimmed = text.trim();
  const value = /^[0-9]+$/.test(trimmed) ? Number(trimmed) : Number.NaN;
  if (!Number.isSafeInteger(value) || value > MAX_SKIP) {
    throw optionError(
      "$skip",
      `Cannot use $skip=${text}: it must be an integer from 0 to ${MAX_SKIP}; page further by following @odata.nextLink`,
    );
  }
  return value;
}

function readSkipToken(text: string): string {
  const match = /^Id:(.+)$/.exec(text.trim());
  if (match === null) {
    throw optionError(
      "$skiptoken",
      `Cannot use $skiptoken=${text}: expected the form Id:<id>, as given in @odata.nextLink`,
    );
  }
  return match[1]!.trim();
}

function readCount(text: string): boolean {
  const lower = text.trim().toLowerCase();
  if (lower === "true") return true;
  if (lower === "false") return false;
  throw optionError("$count", `Cannot use $count=${text}: it must be true or false`);
}

function readFormat(text: string): "json" | "csv" {
  const type = text.split(";")[0]!.trim().toLowerCase();
  if (type === "json" || type === "application/json") return "json";
  if (type === "csv" || type === "text/csv") return "csv";
  throw optionError("$format", `Cannot use $format=${text}: use json or csv`);
}

/** `$orderby`: `Field [asc|desc]`, comma-separated; undefined for the default order (`Id` ascending). */
function readOrderBy(text: string): readonly OrderKey[] | undefined {
  const keys: OrderKey[] = [];
  for (const part of text.split(",")) {
    const match = /^\s*([A-Za-z_][A-Za-z0-9_]*)(?:\s+(asc|desc))?\s*$/i.exec(part);
    if (match === null) {
      throw optionError(
        "$orderby",
        `Cannot read $orderby "${text}": each key is a field name, optionally followed by asc or desc`,
      );
    }
    const name = match[1]!;
    if (keys.some((key) => key.name === name)) {
      throw optionError("$orderby", `Cannot order by ${name} twice`);
    }
    keys.push({ name, descending: match[2]?.toLowerCase() === "desc" });
  }
  const only = keys[0]!;
  return keys.length === 1 && only.name === "Id" && !only.descending ? undefined : keys;
}

// The water-data explorer's side of the API: the rows it reads, the $filter
// of what the user picked, the URLs and curl commands of a query, the next
// links it follows, and a row's unit as a person reads it. Pure functions,
// no DOM (the browser test calls them).

/** What the user picked; an empty string is "any". */
export interface Selection {
  /** A dataset's DOI. */
  readonly dataset: string;
  /** A region id, e.g. `hub.atlantic`. */
  readonly region: string;
  readonly characteristic: string;
  /** First day, `YYYY-MM-DD`. */
  readonly from: string;
  /** Last day, `YYYY-MM-DD`. */
  readonly to: string;
}

/** Query options in order, as name and value (`$filter`, `$top`, ...). */
export type QueryParams = readonly (readonly [string, string])[];

/**
 * An OData string literal: quoted, with `'` doubled.
 * @param value the text
 */
export function odataString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * The `$filter` of a selection (without its location): the clauses joined by
 * `and`, empty when nothing is picked.
 * @param selection what the user picked
 * @param locationId one location's id, for its series
 */
export function buildFilter(selection: Selection, locationId?: number): string {
  const clauses: string[] = [];
  if (selection.dataset !== "") clauses.push(`DOI eq ${odataString(selection.dataset)}`);
  if (selection.region !== "") clauses.push(`RegionId eq ${odataString(selection.region)}`);
  if (locationId !== undefined) clauses.push(`LocationId eq ${locationId}`);
  if (selection.characteristic !== "") {
    clauses.push(`CharacteristicName eq ${odataString(selection.characteristic)}`);
  }
  if (DAY.test(selection.from)) clauses.push(`ActivityStartDate ge ${selection.from}`);
  if (DAY.test(selection.to)) clauses.push(`ActivityStartDate le ${selection.to}`);
  return clauses.join(" and ");
}

/**
 * A query string as the API's own next links write it: `$` names as they
 * are, values percent-encoded (spaces as `%20`), empty values left out.
 * @param params the options
 * @returns `?name=value&...`, or empty
 */
export function queryString(params: QueryParams): string {
  const parts = params.filter(([, value]) => value !== "").map(([name, value]) =>
    `${name}=${encodeValue(value)}`
  );
  return parts.length === 0 ? "" : `?${parts.join("&")}`;
}

// Like encodeURIComponent, but commas, parentheses and colons stay readable
// (`$select=Id,Name`); quotes stay encoded, so a shell's quotes can hold the URL.
function encodeValue(value: string): string {
  return encodeURIComponent(value).replace(/%2C|%3A/g, (escape) => decodeURIComponent(escape))
    .replaceAll("'", "%27");
}

/**
 * A collection's path with its query.
 * @param base the service root's path, e.g. `/v1/odata/v4`
 * @param collection e.g. `Observations`
 * @param params the query options
 */
export function collectionPath(base: string, collection: string, params: QueryParams): string {
  return `${base}/${collection}${queryString(params)}`;
}

/**
 * A text quoted for a POSIX shell: in single quotes, each `'` written `'\''`.
 * @param text the text
 */
export function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}

/**
 * The curl command that asks for a URL with a key, as a terminal takes it.
 * @param url the absolute URL
 * @param key the API key
 */
export function curlCommand(url: string, key: string): string {
  return `curl -H ${shellQuote(`x-api-key: ${key}`)} ${shellQuote(url)}`;
}

/**
 * The path and query of an `@odata.nextLink`, to follow on the page's own
 * origin; undefined for a link to another origin or none.
 * @param link the link the API gave
 * @param origin the page's origin
 */
export function followLink(link: unknown, origin: string): string | undefined {
  if (typeof link !== "string") return undefined;
  let url: URL;
  try {
    url = new URL(link, origin);
  } catch {
    return undefined;
  }
  return url.origin === origin ? `${url.pathname}${url.search}` : undefined;
}

/**
 * A unit as a person reads it: none for a missing one, and for `None`, which
 * is what WQX data gives as the unit of a unitless result such as pH.
 * @param unit the `ResultUnit` of a row
 */
export function displayUnit(unit: string | null | undefined): string {
  const text = (unit ?? "").trim();
  return text.toLowerCase() === "none" ? "" : text;
}

/** A dataset, as the page asks `/Metadata` for it. */
export interface Dataset {
  readonly DOI: string;
  readonly DatasetName: string;
  readonly Citation: string | null;
  readonly Licence: string | null;
  readonly TemporalExtent: readonly string[] | null;
}

/** A location, as the page asks `/Locations` for it. */
export interface LocationRow {
  readonly Id: number;
  readonly Name: string;
  readonly DOI: string;
  readonly Latitude: number | null;
  readonly Longitude: number | null;
  readonly LatitudeNormalized: number | null;
  readonly LongitudeNormalized: number | null;
}

/** An observation, as the page asks `/Observations` for it. */
export interface ObservationRow {
  readonly Id: number;
  readonly LocationId: number;
  readonly ActivityStartDate: string | null;
  readonly ActivityStartTime: string | null;
  readonly CharacteristicName: string | null;
  readonly ResultValue: number | null;
  readonly ResultUnit: string | null;
}

/** A page of a collection: its rows and the link to the next page, when there is one. */
export interface Page<T> {
  readonly value: readonly T[];
  readonly "@odata.nextLink"?: string;
}

/**
 * Where a location is, in degrees: its normalized coordinates, else
 * those given; undefined when it has none.
 * @param row the location
 */
export function coordinates(row: LocationRow): { longitude: number; latitude: number } | undefined {
  const longitude = row.LongitudeNormalized ?? row.Longitude;
  const latitude = row.LatitudeNormalized ?? row.Latitude;
  return typeof longitude === "number" && typeof latitude === "number" &&
      Number.isFinite(longitude) && Number.isFinite(latitude)
    ? { longitude, latitude }
    : undefined;
}

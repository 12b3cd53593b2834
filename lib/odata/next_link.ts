/** What a next link repeats from the request. */
export interface NextLinkOptions {
  /** Scheme, host and port of the request, e.g. `https://api.example.org`. */
  readonly origin: string;
  /** The collection's path, e.g. `/v1/odata/v4/Observations`. */
  readonly path: string;
  /** `$apply` as the request gave it. */
  readonly apply?: string;
  readonly filter?: string;
  readonly select?: readonly string[];
  /** `$orderby` as the request gave it, kept so that the next page goes on in the same order. */
  readonly orderBy?: string;
  readonly top: number;
  readonly format?: "json" | "csv";
  /** The id of the last row of the page. */
  readonly lastId: string | number;
}

/**
 * Builds the absolute URL of the next page: the request's origin and path,
 * its `$apply`, `$filter`, `$select`, `$top` and `$format`, and `$skiptoken=Id:<last id>`.
 * Values are percent-encoded with `%20` for spaces (never `+`), so that every
 * client decodes them alike; `$`, `:`, `,`, `'` and parentheses stay readable.
 * @param options the request's parts and the page's last id
 * @returns the URL
 * @example
 * ```ts
 * buildNextLink({ origin: "http://localhost:8000", path: "/v1/odata/v4/Observations",
 *   filter: "CharacteristicName eq 'pH'", top: 100, lastId: 42 });
 * // "http://localhost:8000/v1/odata/v4/Observations?$filter=CharacteristicName%20eq%20'pH'&$top=100&$skiptoken=Id:42"
 * ```
 */
export function buildNextLink(options: NextLinkOptions): string {
  const parts: string[] = [];
  if (options.apply !== undefined) parts.push(`$apply=${encodeQueryValue(options.apply)}`);
  if (options.filter !== undefined) parts.push(`$filter=${encodeQueryValue(options.filter)}`);
  if (options.select !== undefined) {
    parts.push(`$select=${encodeQueryValue(options.select.join(","))}`);
  }
  if (options.orderBy !== undefined) parts.push(`$orderby=${encodeQueryValue(options.orderBy)}`);
  parts.push(`$top=${options.top}`);
  if (options.format !== undefined) parts.push(`$format=${options.format}`);
  parts.push(`$skiptoken=${encodeQueryValue(`Id:${options.lastId}`)}`);
  return `${options.origin}${options.path}?${parts.join("&")}`;
}

const ENCODE = /[^A-Za-z0-9\-._~'()*!:,$/@]/gu;

/**
 * Percent-encodes a query value, keeping the characters that are safe in a
 * query and common in filters readable.
 * @param value the value
 * @returns the encoded value
 */
export function encodeQueryValue(value: string): string {
  return value.replace(ENCODE, encodeURIComponent);
}

/** A map tile server: its URL template and the origin the page's policy lets images come from. */
export interface TileServer {
  /** e.g. `https://tile.openstreetmap.org/{z}/{x}/{y}.png`. */
  readonly template: string;
  /** e.g. `https://tile.openstreetmap.org`. */
  readonly origin: string;
}

const PLACEHOLDER = /\{([^{}]*)\}/g;

/**
 * Reads a tile URL template (`MAP_TILE_URL`): an `https:` or `http:` URL on
 * one host with `{z}`, `{x}` and `{y}` in its path or query, the XYZ scheme
 * of OpenStreetMap and most tile servers. A `{s}` subdomain list is refused:
 * each host would be another origin for the Content-Security-Policy.
 * @param text the template
 * @returns the template and its origin
 * @throws {RangeError} when it is not such a URL
 * @example
 * ```ts
 * parseTileUrl("https://tile.openstreetmap.org/{z}/{x}/{y}.png").origin; // "https://tile.openstreetmap.org"
 * ```
 */
export function parseTileUrl(text: string): TileServer {
  const template = text.trim();
  const names = [...template.matchAll(PLACEHOLDER)].map((match) => match[1]);
  for (const name of names) {
    if (name !== "z" && name !== "x" && name !== "y") {
      throw new RangeError(
        `"{${name}}" is not a placeholder of the template (only {z}, {x} and {y} are)`,
      );
    }
  }
  for (const name of ["z", "x", "y"]) {
    if (!names.includes(name)) throw new RangeError(`the template has no {${name}}`);
  }
  const url = URL.parse(template.replace(PLACEHOLDER, "0"));
  if (
    url === null || (url.protocol !== "https:" && url.protocol !== "http:") || url.hostname === ""
  ) {
    throw new RangeError("expected an https: or http: URL");
  }
  if (url.username !== "" || url.password !== "") {
    throw new RangeError("a tile URL may not hold credentials");
  }
  return { template, origin: url.origin };
}

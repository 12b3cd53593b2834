// The water-data explorer: the page's behaviour. It asks only the public API
// of the server that served it, with the key the user gives (kept in
// sessionStorage), one request at a time, paced by the key's rate limit as
// the API's RateLimit headers tell it (and waiting out a 429 as Retry-After says).
//
// It is one module, with no imports: the pure part first (exported, so that
// the browser test can call it), then the page's wiring.

// --- The pure part: filters, URLs, retries, pacing, the map's projection and basemap, the plot's scales

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
  if (selection.characteristic !== "") clauses.push(`CharacteristicName eq ${odataString(selection.characteristic)}`);
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
  const parts = params.filter(([, value]) => value !== "").map(([name, value]) => `${name}=${encodeValue(value)}`);
  return parts.length === 0 ? "" : `?${parts.join("&")}`;
}

// Like encodeURIComponent, but commas, parentheses and colons stay readable
// (`$select=Id,Name`); quotes stay encoded, so a shell's quotes can hold the URL.
function encodeValue(value: string): string {
  return encodeURIComponent(value).replace(/%2C|%3A/g, (escape) => decodeURIComponent(escape)).replaceAll("'", "%27");
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
 * How long to wait before asking again: for 429 and 503 the `Retry-After`
 * seconds (1 when absent or not a number of seconds), for anything else, and
 * after `maxAttempts` tries, never (undefined).
 * @param status the answer's status
 * @param retryAfter its `Retry-After` header
 * @param attempt how many tries were made so far (1 after the first)
 * @param maxAttempts tries in all
 * @returns milliseconds, or undefined to give up
 */
export function retryDelayMs(status: number, retryAfter: string | null, attempt: number, maxAttempts = 6): number | undefined {
  if ((status !== 429 && status !== 503) || attempt >= maxAttempts) return undefined;
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim()) ? Number(retryAfter.trim()) : 1;
  return Math.min(seconds, 60) * 1000;
}

// --- Pacing: the key's rate limit, as the API's RateLimit headers give it --------

/**
 * What the API last said of the key's limit: a bucket of `limit` requests,
 * refilled from empty in `windowSeconds`, of which `remaining` were left when
 * the answer came (`at`, ms since the epoch).
 */
export interface RateState {
  readonly limit: number;
  readonly windowSeconds: number;
  readonly remaining: number;
  readonly at: number;
}

/** What {@linkcode readRateLimit} reads: a `Headers`, or anything with its `get`. */
export interface HeaderSource {
  get(name: string): string | null;
}

/**
 * The key's limit from an answer's headers: `RateLimit-Policy: <limit>;w=<window>`
 * (its slowest policy, when it lists several; a `q=` parameter is the
 * limit too) and `RateLimit-Remaining`; without a policy, the rate from
 * `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (the
 * seconds until the bucket is full again).
 * @param headers the answer's headers
 * @param at when the answer came, ms
 * @returns the state, or undefined when the answer says nothing of a limit
 */
export function readRateLimit(headers: HeaderSource, at: number): RateState | undefined {
  const remaining = wholeNumber(headers.get("ratelimit-remaining"));
  if (remaining === undefined) return undefined;
  let best: { limit: number; windowSeconds: number } | undefined;
  for (const item of (headers.get("ratelimit-policy") ?? "").split(",")) {
    const [first = "", ...params] = item.split(";").map((part) => part.trim());
    let limit = wholeNumber(first);
    let windowSeconds: number | undefined;
    for (const param of params) {
      const [name, value] = param.split("=").map((part) => part.trim());
      if (name === "w") windowSeconds = positiveNumber(value);
      if (name === "q") limit = wholeNumber(value ?? null);
    }
    if (limit === undefined || windowSeconds === undefined || limit < 1) continue;
    if (best === undefined || limit / windowSeconds < best.limit / best.windowSeconds) best = { limit, windowSeconds };
  }
  if (best === undefined) {
    const limit = wholeNumber(headers.get("ratelimit-limit"));
    const reset = positiveNumber(headers.get("ratelimit-reset") ?? undefined);
    if (limit === undefined || reset === undefined || limit <= remaining) return undefined;
    // The bucket fills from `remaining` to `limit` in `reset` seconds: from empty, in this long.
    best = { limit, windowSeconds: (reset * limit) / (limit - remaining) };
  }
  return { ...best, remaining, at };
}

function wholeNumber(text: string | null): number | undefined {
  return text !== null && /^\s*\d+\s*$/.test(text) ? Number(text) : undefined;
}

function positiveNumber(text: string | undefined): number | undefined {
  const value = text !== undefined && /^\s*\d+(?:\.\d+)?\s*$/.test(text) ? Number(text) : NaN;
  return value > 0 ? value : undefined;
}

/**
 * How long to wait before the next request so that the key has a request
 * left for it: none while the last answer said one remains; otherwise until
 * the bucket, refilling at `limit / windowSeconds` a second since that answer,
 * holds one again. (The API counted before answering, so this errs long.)
 * @param state what the last answer said, if anything
 * @param now the time, ms
 * @returns milliseconds, 0 to send now
 */
export function rateDelayMs(state: RateState | undefined, now: number): number {
  if (state === undefined || state.remaining >= 1) return 0;
  const perMs = state.limit / state.windowSeconds / 1000;
  return Math.max(0, Math.ceil(state.at + (1 - state.remaining) / perMs - now));
}

// --- The map -----------------------------------------------------------------

/** A point in Web Mercator's unit square: x east from -180°, y south from 85.05°N. */
export interface WorldPoint {
  readonly x: number;
  readonly y: number;
}

const MAX_LATITUDE = 85.05112878;

/**
 * Web Mercator (the projection of web map tiles) to the unit square.
 * @param longitude degrees east
 * @param latitude degrees north, clamped to ±85.05°
 */
export function mercator(longitude: number, latitude: number): WorldPoint {
  const phi = (Math.max(-MAX_LATITUDE, Math.min(MAX_LATITUDE, latitude)) * Math.PI) / 180;
  return {
    x: (longitude + 180) / 360,
    y: (1 - Math.log(Math.tan(Math.PI / 4 + phi / 2)) / Math.PI) / 2,
  };
}

/**
 * The inverse of {@linkcode mercator}.
 * @param point a point of the unit square
 * @returns degrees east and north
 */
export function unproject(point: WorldPoint): { longitude: number; latitude: number } {
  return {
    longitude: point.x * 360 - 180,
    latitude: (Math.atan(Math.sinh(Math.PI * (1 - 2 * point.y))) * 180) / Math.PI,
  };
}

/** Where the unit square lands on the drawing: pixels per unit, and the unit point at its centre. */
export interface MapView {
  readonly width: number;
  readonly height: number;
  /** Pixels per world unit. */
  readonly scale: number;
  readonly center: WorldPoint;
}

/** Canada, where the demo's (and DataStream's) data lie: the view with no location. */
const DEFAULT_BOUNDS = { west: -141, east: -52, south: 41.7, north: 72 };

/**
 * The view that shows every point with a margin, or Canada when there are
 * none; a single point (or points close together) gets about two degrees around it.
 * @param points the locations, in degrees
 * @param width the drawing's width in pixels
 * @param height its height
 * @param margin pixels kept free at each edge
 */
export function fitView(
  points: readonly { readonly longitude: number; readonly latitude: number }[],
  width: number,
  height: number,
  margin = 24,
): MapView {
  const projected = points.length === 0
    ? [mercator(DEFAULT_BOUNDS.west, DEFAULT_BOUNDS.north), mercator(DEFAULT_BOUNDS.east, DEFAULT_BOUNDS.south)]
    : points.map((point) => mercator(point.longitude, point.latitude));
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (const point of projected) {
    minX = Math.min(minX, point.x);
    maxX = Math.max(maxX, point.x);
    minY = Math.min(minY, point.y);
    maxY = Math.max(maxY, point.y);
  }
  const least = 2 / 360; // two degrees of longitude: a dataset's few square kilometres still show where they are
  const spanX = Math.max(maxX - minX, least);
  const spanY = Math.max(maxY - minY, least);
  const scale = Math.min((width - 2 * margin) / spanX, (height - 2 * margin) / spanY);
  return { width, height, scale, center: { x: (minX + maxX) / 2, y: (minY + maxY) / 2 } };
}

/**
 * A point's place on the drawing.
 * @param view the view
 * @param point a point of the unit square
 */
export function toPixels(view: MapView, point: WorldPoint): { x: number; y: number } {
  return {
    x: (point.x - view.center.x) * view.scale + view.width / 2,
    y: (point.y - view.center.y) * view.scale + view.height / 2,
  };
}

/** The longitudes and latitudes of the graticule lines in a view, a round step apart. */
export interface Graticule {
  readonly step: number;
  readonly longitudes: readonly number[];
  readonly latitudes: readonly number[];
}

/**
 * The graticule of a view: lines every 1, 2, 5, 10, 20 or 30 degrees,
 * whichever gives at most about six across the wider side.
 * @param view the view
 */
export function graticule(view: MapView): Graticule {
  const topLeft = unproject({ x: view.center.x - view.width / 2 / view.scale, y: view.center.y - view.height / 2 / view.scale });
  const bottomRight = unproject({ x: view.center.x + view.width / 2 / view.scale, y: view.center.y + view.height / 2 / view.scale });
  const span = Math.max(bottomRight.longitude - topLeft.longitude, topLeft.latitude - bottomRight.latitude);
  const step = [1, 2, 5, 10, 20, 30].find((candidate) => span / candidate <= 6) ?? 30;
  const range = (from: number, to: number): number[] => {
    const lines: number[] = [];
    for (let value = Math.ceil(from / step) * step; value <= to; value += step) lines.push(value);
    return lines;
  };
  return {
    step,
    longitudes: range(Math.max(-180, topLeft.longitude), Math.min(180, bottomRight.longitude)),
    latitudes: range(Math.max(-MAX_LATITUDE, bottomRight.latitude), Math.min(MAX_LATITUDE, topLeft.latitude)),
  };
}

/** A map tile placed on the drawing. */
export interface PlacedTile {
  readonly z: number;
  readonly x: number;
  readonly y: number;
  /** Top-left corner and side, in pixels of the drawing. */
  readonly left: number;
  readonly top: number;
  readonly size: number;
}

/**
 * The tiles that cover a view, at the zoom whose tiles are drawn at 256 to 512 pixels.
 * @param view the view
 * @param maxZoom the tile server's deepest zoom
 */
export function coveringTiles(view: MapView, maxZoom = 18): PlacedTile[] {
  const z = Math.max(0, Math.min(maxZoom, Math.floor(Math.log2(view.scale / 256))));
  const count = 2 ** z;
  const size = view.scale / count;
  const left = view.center.x - view.width / 2 / view.scale;
  const top = view.center.y - view.height / 2 / view.scale;
  const right = view.center.x + view.width / 2 / view.scale;
  const bottom = view.center.y + view.height / 2 / view.scale;
  const tiles: PlacedTile[] = [];
  for (let y = Math.max(0, Math.floor(top * count)); y <= Math.min(count - 1, Math.floor(bottom * count)); y++) {
    for (let x = Math.max(0, Math.floor(left * count)); x <= Math.min(count - 1, Math.floor(right * count)); x++) {
      const corner = toPixels(view, { x: x / count, y: y / count });
      tiles.push({ z, x, y, left: corner.x, top: corner.y, size });
    }
  }
  return tiles;
}

/**
 * A tile's URL from a template with `{z}`, `{x}` and `{y}`.
 * @param template e.g. `https://tile.example.org/{z}/{x}/{y}.png`
 * @param tile the tile
 */
export function tileUrl(template: string, tile: { readonly z: number; readonly x: number; readonly y: number }): string {
  return template.replaceAll("{z}", String(tile.z)).replaceAll("{x}", String(tile.x)).replaceAll("{y}", String(tile.y));
}

// --- The basemap: land, lakes, rivers and borders of Natural Earth ------------

/** A ring or a line of the basemap: x, y pairs in the unit square of {@linkcode mercator}, and its bounds. */
export interface BasemapShape {
  readonly points: Float64Array;
  readonly minX: number;
  readonly minY: number;
  readonly maxX: number;
  readonly maxY: number;
}

/** A layer of the basemap: areas (rings, filled even-odd so that a ring inside another is a hole) or lines. */
export interface BasemapLayer {
  readonly name: string;
  readonly kind: "area" | "line";
  readonly shapes: readonly BasemapShape[];
}

/**
 * The layers of a basemap file (`basemap.json`: `{ unitsPerDegree, layers:
 * [{ name, kind, shapes }] }`, each shape its first point then the step to
 * each next one, east and north), projected to the unit square.
 * @param file the file's JSON
 * @throws {TypeError} when the file is not of that shape
 */
export function readBasemap(file: unknown): BasemapLayer[] {
  const record = typeof file === "object" && file !== null ? (file as Record<string, unknown>) : {};
  const units = record["unitsPerDegree"];
  const layers = record["layers"];
  if (typeof units !== "number" || !(units > 0) || !Array.isArray(layers)) {
    throw new TypeError("Cannot read the basemap: expected {unitsPerDegree, layers}");
  }
  return layers.map((layer: unknown, index) => {
    const { name, kind, shapes } = typeof layer === "object" && layer !== null ? (layer as Record<string, unknown>) : {};
    if (typeof name !== "string" || (kind !== "area" && kind !== "line") || !Array.isArray(shapes)) {
      throw new TypeError(`Cannot read the basemap: layer ${index + 1} needs a name, a kind ("area" or "line") and shapes`);
    }
    return { name, kind, shapes: shapes.map((shape: unknown) => readShape(shape, units, name)) };
  });
}

function readShape(shape: unknown, units: number, layer: string): BasemapShape {
  if (!Array.isArray(shape) || shape.length % 2 !== 0 || !shape.every((value) => Number.isInteger(value))) {
    throw new TypeError(`Cannot read the basemap: a shape of "${layer}" is not a list of whole-number steps`);
  }
  const points = new Float64Array(shape.length);
  let longitude = 0, latitude = 0;
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (let i = 0; i < shape.length; i += 2) {
    longitude += shape[i] as number;
    latitude += shape[i + 1] as number;
    const { x, y } = mercator(longitude / units, latitude / units);
    points[i] = x;
    points[i + 1] = y;
    minX = Math.min(minX, x);
    maxX = Math.max(maxX, x);
    minY = Math.min(minY, y);
    maxY = Math.max(maxY, y);
  }
  return { points, minX, minY, maxX, maxY };
}

/**
 * A layer's SVG path data in a view: the shapes that reach the drawing and
 * are at least `step` pixels across, their points closer than `step` pixels
 * to the last one dropped, and cut at the drawing's edges grown by `pad`
 * pixels (so that a coast's stroke along a cut is never seen).
 * @param layer the layer
 * @param view the view
 * @param pad pixels outside the drawing kept
 * @param step the least distance between two points kept, and the least size of a shape, in pixels
 * @returns the path data, empty when nothing of the layer is in view
 */
export function layerPath(layer: BasemapLayer, view: MapView, pad = 4, step = 1): string {
  const rect = { left: -pad, top: -pad, right: view.width + pad, bottom: view.height + pad };
  const west = view.center.x - (view.width / 2 + pad) / view.scale;
  const east = view.center.x + (view.width / 2 + pad) / view.scale;
  const north = view.center.y - (view.height / 2 + pad) / view.scale;
  const south = view.center.y + (view.height / 2 + pad) / view.scale;
  let path = "";
  for (const shape of layer.shapes) {
    if (shape.maxX < west || shape.minX > east || shape.maxY < north || shape.minY > south) continue;
    if ((shape.maxX - shape.minX) * view.scale < step && (shape.maxY - shape.minY) * view.scale < step) continue;
    const pixels = projectShape(shape.points, view, step);
    if (layer.kind === "area") {
      const ring = clipRing(pixels, rect);
      if (ring.length >= 6) path += `${pathData(ring)}Z`;
    } else {
      for (const line of clipLine(pixels, rect)) if (line.length >= 4) path += pathData(line);
    }
  }
  return path;
}

/** A shape's points on the drawing, each at least `step` pixels from the last kept (a line's last point always kept). */
function projectShape(points: Float64Array, view: MapView, step: number): number[] {
  const out: number[] = [];
  const halfWidth = view.width / 2, halfHeight = view.height / 2;
  let lastX = NaN, lastY = NaN;
  for (let i = 0; i < points.length; i += 2) {
    const x = (points[i]! - view.center.x) * view.scale + halfWidth;
    const y = (points[i + 1]! - view.center.y) * view.scale + halfHeight;
    if (Math.abs(x - lastX) < step && Math.abs(y - lastY) < step && i + 2 < points.length) continue;
    out.push(x, y);
    lastX = x;
    lastY = y;
  }
  return out;
}

interface Rect {
  readonly left: number;
  readonly top: number;
  readonly right: number;
  readonly bottom: number;
}

/**
 * A ring cut to a rectangle (Sutherland-Hodgman: against each edge in turn);
 * a concave ring may come back with edges along the rectangle's sides, which
 * fill as they should.
 * @param ring x, y pairs, closed implicitly
 * @param rect the rectangle
 * @returns the cut ring's x, y pairs, empty when nothing is inside
 */
export function clipRing(ring: readonly number[], rect: Rect): number[] {
  let points = ring;
  const edges: [(x: number, y: number) => boolean, (ax: number, ay: number, bx: number, by: number) => [number, number]][] = [
    [(x) => x >= rect.left, (ax, ay, bx, by) => [rect.left, ay + ((by - ay) * (rect.left - ax)) / (bx - ax)]],
    [(x) => x <= rect.right, (ax, ay, bx, by) => [rect.right, ay + ((by - ay) * (rect.right - ax)) / (bx - ax)]],
    [(_x, y) => y >= rect.top, (ax, ay, bx, by) => [ax + ((bx - ax) * (rect.top - ay)) / (by - ay), rect.top]],
    [(_x, y) => y <= rect.bottom, (ax, ay, bx, by) => [ax + ((bx - ax) * (rect.bottom - ay)) / (by - ay), rect.bottom]],
  ];
  for (const [inside, cross] of edges) {
    if (points.length === 0) break;
    const out: number[] = [];
    let ax = points[points.length - 2]!, ay = points[points.length - 1]!;
    let aIn = inside(ax, ay);
    for (let i = 0; i < points.length; i += 2) {
      const bx = points[i]!, by = points[i + 1]!;
      const bIn = inside(bx, by);
      if (bIn !== aIn) out.push(...cross(ax, ay, bx, by));
      if (bIn) out.push(bx, by);
      [ax, ay, aIn] = [bx, by, bIn];
    }
    points = out;
  }
  return [...points];
}

/**
 * A line cut to a rectangle: the runs of it inside (Liang-Barsky on each segment).
 * @param line x, y pairs
 * @param rect the rectangle
 * @returns each run inside as x, y pairs
 */
export function clipLine(line: readonly number[], rect: Rect): number[][] {
  const runs: number[][] = [];
  let run: number[] = [];
  for (let i = 0; i + 3 < line.length; i += 2) {
    const ax = line[i]!, ay = line[i + 1]!, bx = line[i + 2]!, by = line[i + 3]!;
    const dx = bx - ax, dy = by - ay;
    let enter = 0, leave = 1;
    let visible = true;
    for (const [p, q] of [[-dx, ax - rect.left], [dx, rect.right - ax], [-dy, ay - rect.top], [dy, rect.bottom - ay]] as const) {
      if (p === 0) {
        if (q < 0) visible = false;
      } else if (p < 0) {
        enter = Math.max(enter, q / p);
      } else {
        leave = Math.min(leave, q / p);
      }
    }
    if (!visible || enter > leave) {
      if (run.length > 0) runs.push(run);
      run = [];
      continue;
    }
    if (run.length === 0 || enter > 0) {
      if (run.length > 0) runs.push(run);
      run = [ax + enter * dx, ay + enter * dy];
    }
    run.push(ax + leave * dx, ay + leave * dy);
    if (leave < 1) {
      runs.push(run);
      run = [];
    }
  }
  if (run.length > 0) runs.push(run);
  return runs;
}

/** Path data: the first point, then each step to the next (shorter than each point again), in tenths of a pixel. */
function pathData(points: readonly number[]): string {
  let lastX = Math.round(points[0]! * 10), lastY = Math.round(points[1]! * 10);
  let data = `M${lastX / 10} ${lastY / 10}`;
  for (let i = 2; i < points.length; i += 2) {
    const x = Math.round(points[i]! * 10), y = Math.round(points[i + 1]! * 10);
    const dx = (x - lastX) / 10, dy = (y - lastY) / 10;
    data += `l${dx}${dy < 0 ? "" : " "}${dy}`;
    lastX = x;
    lastY = y;
  }
  return data;
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

// --- The plot ----------------------------------------------------------------

/** One reading of a series: its time (ms since the epoch, as if UTC) and value. */
export interface SeriesPoint {
  readonly time: number;
  readonly value: number;
}

/**
 * A reading's time from its date and (optional) time of day, as written in
 * the data; the time zone is left aside, as a plot of one location needs.
 * @param date `YYYY-MM-DD`
 * @param time `HH:MM` or `HH:MM:SS`, or nothing
 * @returns milliseconds, or undefined when the date is not one
 */
export function readingTime(date: unknown, time: unknown): number | undefined {
  if (typeof date !== "string") return undefined;
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (day === null) return undefined;
  const clock = typeof time === "string" ? /^(\d{1,2}):(\d{2})(?::(\d{2}))?/.exec(time) : null;
  return Date.UTC(
    Number(day[1]),
    Number(day[2]) - 1,
    Number(day[3]),
    clock === null ? 0 : Number(clock[1]),
    clock === null ? 0 : Number(clock[2]),
    clock?.[3] === undefined ? 0 : Number(clock[3]),
  );
}

/**
 * Round numbers between two values for an axis: a step of 1, 2 or 5 times a
 * power of ten, giving at most about `count` ticks.
 * @param min the lowest value
 * @param max the highest value
 * @param count ticks wanted
 */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (min === max) return [min];
  const raw = (max - min) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= raw) ?? 10 * power;
  const ticks: number[] = [];
  for (let value = Math.ceil(min / step) * step; value <= max + step * 1e-9; value += step) {
    ticks.push(Number(value.toPrecision(12)));
  }
  return ticks;
}

/** A tick of the time axis: where, and its label. */
export interface TimeTick {
  readonly time: number;
  readonly label: string;
}

const MONTH_STEPS = [1, 3, 6] as const;
const YEAR_STEPS = [1, 2, 5, 10, 20, 50] as const;

/**
 * Calendar ticks between two times: days, months or years, whichever gives
 * at most about `count`, labelled `YYYY`, `YYYY-MM` or `YYYY-MM-DD`.
 * @param start the first time, ms
 * @param end the last time, ms
 * @param count ticks wanted
 */
export function timeTicks(start: number, end: number, count = 6): TimeTick[] {
  const first = new Date(start);
  const days = (end - start) / 86_400_000;
  const years = days / 365.25;
  if (years / 1 > count || days > 366 * 2) {
    const step = YEAR_STEPS.find((candidate) => years / candidate <= count) ?? 100;
    const ticks: TimeTick[] = [];
    for (let year = Math.ceil(first.getUTCFullYear() / step) * step; ; year += step) {
      const time = Date.UTC(year, 0, 1);
      if (time > end) break;
      if (time >= start) ticks.push({ time, label: String(year) });
    }
    return ticks;
  }
  const months = days / 30.44;
  if (months > count / 2 || days > 62) {
    const step = MONTH_STEPS.find((candidate) => months / candidate <= count) ?? 12;
    const ticks: TimeTick[] = [];
    for (let index = first.getUTCFullYear() * 12 + first.getUTCMonth(); ; index++) {
      const year = Math.floor(index / 12);
      const month = index % 12;
      const time = Date.UTC(year, month, 1);
      if (time > end) break;
      if (time >= start && month % step === 0) ticks.push({ time, label: `${year}-${pad(month + 1)}` });
    }
    return ticks;
  }
  const step = Math.max(1, Math.ceil(days / count));
  const ticks: TimeTick[] = [];
  const day0 = Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), first.getUTCDate());
  for (let time = day0 < start ? day0 + 86_400_000 : day0; time <= end; time += step * 86_400_000) {
    const date = new Date(time);
    ticks.push({ time, label: `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}` });
  }
  return ticks;
}

function pad(value: number): string {
  return String(value).padStart(2, "0");
}

/** A series laid out on a plot: its points in pixels and its axes' ticks. */
export interface SeriesLayout {
  readonly points: readonly { readonly x: number; readonly y: number }[];
  readonly xTicks: readonly { readonly x: number; readonly label: string }[];
  readonly yTicks: readonly { readonly y: number; readonly label: string }[];
  readonly min: number;
  readonly max: number;
}

/** The plot's frame: its size and the margins that hold the axes. */
export interface PlotFrame {
  readonly width: number;
  readonly height: number;
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}

/**
 * Lays a series out on a plot: time across, value up, both with round ticks.
 * @param series the readings, in any order (they are drawn by time)
 * @param frame the plot's size and margins
 */
export function layOutSeries(series: readonly SeriesPoint[], frame: PlotFrame): SeriesLayout {
  const sorted = [...series].sort((a, b) => a.time - b.time);
  if (sorted.length === 0) return { points: [], xTicks: [], yTicks: [], min: NaN, max: NaN };
  const start = sorted[0]!.time;
  const end = sorted[sorted.length - 1]!.time;
  let min = Infinity, max = -Infinity;
  for (const point of sorted) {
    min = Math.min(min, point.value);
    max = Math.max(max, point.value);
  }
  const yTickValues = niceTicks(min, max, 5);
  const low = Math.min(min, yTickValues[0] ?? min);
  const high = Math.max(max, yTickValues[yTickValues.length - 1] ?? max);
  const spanT = end - start || 86_400_000;
  const spanV = high - low || 1;
  const innerWidth = frame.width - frame.left - frame.right;
  const innerHeight = frame.height - frame.top - frame.bottom;
  const x = (time: number): number => frame.left + (end === start ? innerWidth / 2 : ((time - start) / spanT) * innerWidth);
  const y = (value: number): number => frame.top + (high === low ? innerHeight / 2 : (1 - (value - low) / spanV) * innerHeight);
  return {
    points: sorted.map((point) => ({ x: x(point.time), y: y(point.value) })),
    xTicks: timeTicks(start, end, Math.max(2, Math.floor(innerWidth / 110))).map((tick) => ({ x: x(tick.time), label: tick.label })),
    yTicks: yTickValues.map((value) => ({ y: y(value), label: String(value) })),
    min,
    max,
  };
}

// --- The page ------------------------------------------------------------------

const KEY_STORAGE = "tributary.explorer.key";
const RATE_STORAGE = "tributary.explorer.rate";
const PAGE_SIZE = 25;
const LOCATIONS_PER_REQUEST = 5000;
const SERIES_PER_REQUEST = 10_000;
/** Pages followed at most for the map and for a series, so that a huge selection stays bounded. */
const MAX_PAGES = 20;
const SUGGESTION_SAMPLE = 10_000;
/** How a drawing is sized: its height a share of its width, within bounds; the width before the page is laid out. */
interface DrawingShape {
  readonly aspect: number;
  readonly minHeight: number;
  readonly maxHeight: number;
  readonly fallbackWidth: number;
}
const MAP_SHAPE: DrawingShape = { aspect: 0.625, minHeight: 260, maxHeight: 560, fallbackWidth: 800 };
const PLOT_SHAPE: DrawingShape = { aspect: 0.4, minHeight: 220, maxHeight: 320, fallbackWidth: 800 };
/** The plot's margins, which hold its axes' labels. */
const PLOT_MARGIN = { left: 56, right: 14, top: 20, bottom: 34 } as const;
const SVG = "http://www.w3.org/2000/svg";
const OBSERVATION_FIELDS = "Id,LocationId,ActivityStartDate,ActivityStartTime,CharacteristicName,ResultValue,ResultUnit";

interface Dataset {
  readonly DOI: string;
  readonly DatasetName: string;
  readonly Citation: string | null;
  readonly Licence: string | null;
  readonly TemporalExtent: readonly string[] | null;
}

interface LocationRow {
  readonly Id: number;
  readonly Name: string;
  readonly DOI: string;
  readonly Latitude: number | null;
  readonly Longitude: number | null;
  readonly LatitudeNormalized: number | null;
  readonly LongitudeNormalized: number | null;
}

interface ObservationRow {
  readonly Id: number;
  readonly LocationId: number;
  readonly ActivityStartDate: string | null;
  readonly ActivityStartTime: string | null;
  readonly CharacteristicName: string | null;
  readonly ResultValue: number | null;
  readonly ResultUnit: string | null;
}

interface Page<T> {
  readonly value: readonly T[];
  readonly "@odata.nextLink"?: string;
}

/** A refusal or failure of the API, with its status and the message of its error body. */
class ApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

function byId<T extends Element>(id: string, type: abstract new () => T): T {
  const found = document.getElementById(id);
  if (!(found instanceof type)) throw new TypeError(`Cannot find #${id}`);
  return found;
}

function meta(name: string): string {
  return document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
}

const ui = {
  keyForm: byId("key-form", HTMLFormElement),
  key: byId("api-key", HTMLInputElement),
  forget: byId("forget-key", HTMLButtonElement),
  filters: byId("filters", HTMLFormElement),
  dataset: byId("dataset", HTMLSelectElement),
  region: byId("region", HTMLSelectElement),
  characteristic: byId("characteristic", HTMLInputElement),
  suggestions: byId("characteristics", HTMLDataListElement),
  from: byId("from", HTMLInputElement),
  to: byId("to", HTMLInputElement),
  status: byId("status", HTMLElement),
  count: byId("count", HTMLOutputElement),
  locationCount: byId("location-count", HTMLOutputElement),
  map: byId("map", SVGSVGElement),
  mapDescription: byId("map-description", SVGDescElement),
  mapNote: byId("map-note", HTMLElement),
  seriesLocation: byId("series-location", HTMLSelectElement),
  series: byId("series", SVGSVGElement),
  seriesDescription: byId("series-description", SVGDescElement),
  seriesNote: byId("series-note", HTMLElement),
  rows: byId("observation-rows", HTMLTableSectionElement),
  previous: byId("previous", HTMLButtonElement),
  next: byId("next", HTMLButtonElement),
  pageInfo: byId("page-info", HTMLElement),
  apiUrl: byId("api-url", HTMLElement),
  apiCurl: byId("api-curl", HTMLElement),
  csvCurl: byId("csv-curl", HTMLElement),
  copyUrl: byId("copy-url", HTMLButtonElement),
  copyCurl: byId("copy-curl", HTMLButtonElement),
  download: byId("download", HTMLButtonElement),
  citations: byId("citations", HTMLElement),
  attribution: byId("attribution", HTMLElement),
};

const apiBase = meta("explorer:api");
const tileTemplate = meta("explorer:tiles");

let key = sessionStorage.getItem(KEY_STORAGE) ?? "";
let datasets: Dataset[] = [];
let locations = new Map<number, LocationRow>();
/** The selection shown, its filter, and what cancels its requests. */
let shown: { selection: Selection; filter: string; controller: AbortController } | undefined;
/** The table's pages: the path of each page seen, the last one shown. */
let pagePaths: string[] = [];
let nextPath: string | undefined;
let total = 0;
let seriesController: AbortController | undefined;
let suggestionsFor: string | undefined;
let rendered = false;
/** Whether the map shows a selection's locations (and not yet the view before one). */
let located = false;
/** The basemap's layers, once loaded. */
let basemap: BasemapLayer[] = [];
/** The series on the plot, to draw again at another width. */
let plotted: { points: readonly SeriesPoint[]; units: readonly string[]; title: string } | undefined;
/** The width each drawing was last drawn at. */
const drawnWidths = new Map<SVGSVGElement, number>();

// --- Requests ------------------------------------------------------------------

let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs API calls one after another: the API lets a key have one request in
 * flight (a second gets 429), and a request is sent only once the one before
 * it has been read whole.
 */
function enqueue<T>(task: () => Promise<T>): Promise<T> {
  const run = queue.then(task, task);
  queue = run.catch(() => undefined);
  return run;
}

function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

/**
 * The key's limit as the last answer gave it, kept in the tab's session
 * storage, so that a page loaded again at once paces its first requests too.
 */
let rate = readStoredRate();

function readStoredRate(): RateState | undefined {
  try {
    const stored = JSON.parse(sessionStorage.getItem(RATE_STORAGE) ?? "null") as Partial<RateState> | null;
    const values = [stored?.limit, stored?.windowSeconds, stored?.remaining, stored?.at];
    return values.every((value) => typeof value === "number" && Number.isFinite(value)) ? (stored as RateState) : undefined;
  } catch {
    return undefined;
  }
}

function noteRate(response: Response): void {
  const said = readRateLimit(response.headers, Date.now());
  if (said === undefined) return;
  rate = said;
  try {
    sessionStorage.setItem(RATE_STORAGE, JSON.stringify(said));
  } catch {
    // Storage full or refused: this page paces itself all the same.
  }
}

/**
 * Asks the API for a path of this origin and reads the answer, inside the
 * queue: after waiting, when the key's bucket is empty, until it holds a
 * request again; on a 429 all the same (another tab with the key), after
 * `Retry-After`. A request in flight is never aborted (the API may hold its
 * place a moment longer): when `signal` is aborted meanwhile, the answer is
 * read whole and dropped, and a request not yet sent is not sent.
 */
function call<T>(path: string, signal: AbortSignal, read: (response: Response) => Promise<T>, accept = "application/json"): Promise<T> {
  return enqueue(async () => {
    for (let attempt = 1; ; attempt++) {
      signal.throwIfAborted();
      const pause = rateDelayMs(rate, Date.now());
      if (pause > 0) await wait(pause, signal);
      const response = await fetch(path, { headers: { "x-api-key": key, accept }, credentials: "omit", cache: "no-store" });
      noteRate(response);
      if (response.ok) {
        const value = await read(response);
        signal.throwIfAborted();
        return value;
      }
      const delay = retryDelayMs(response.status, response.headers.get("retry-after"), attempt);
      if (delay === undefined) {
        const message = await errorMessage(response);
        signal.throwIfAborted();
        throw new ApiError(response.status, message);
      }
      await response.arrayBuffer();
      signal.throwIfAborted();
      say(`Waiting ${delay / 1000} s: ${response.status === 429 ? "the API's rate limit" : "the API is busy"}…`);
      await wait(delay, signal);
    }
  });
}

async function errorMessage(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { message?: unknown } };
    if (typeof body.error?.message === "string") return body.error.message;
  } catch {
    // Not a JSON error body: the status says it.
  }
  return `${response.status} ${response.statusText}`;
}

function getJson<T>(path: string, signal: AbortSignal): Promise<T> {
  return call(path, signal, (response) => response.json() as Promise<T>);
}

/** Every row of a collection query, following next links up to {@linkcode MAX_PAGES} pages. */
async function getAll<T>(path: string, signal: AbortSignal): Promise<{ rows: T[]; complete: boolean }> {
  const rows: T[] = [];
  let next: string | undefined = path;
  for (let pages = 0; next !== undefined && pages < MAX_PAGES; pages++) {
    const page: Page<T> = await getJson<Page<T>>(next, signal);
    rows.push(...page.value);
    next = followLink(page["@odata.nextLink"], location.origin);
  }
  return { rows, complete: next === undefined };
}

// --- Selection -------------------------------------------------------------------

function readSelection(): Selection {
  return {
    dataset: ui.dataset.value,
    region: ui.region.value,
    characteristic: ui.characteristic.value.trim(),
    from: ui.from.value,
    to: ui.to.value,
  };
}

/** The selection in the address (`#region=...&characteristic=...`), so that a view can be shared. */
function writeHash(selection: Selection): void {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(selection)) if (value !== "") params.set(name, value);
  const hash = params.toString();
  history.replaceState(null, "", hash === "" ? location.pathname : `#${hash}`);
}

function readHash(): void {
  const params = new URLSearchParams(location.hash.slice(1));
  ui.region.value = params.get("region") ?? "";
  ui.characteristic.value = params.get("characteristic") ?? "";
  ui.from.value = params.get("from") ?? "";
  ui.to.value = params.get("to") ?? "";
}

function say(message: string): void {
  ui.status.textContent = message;
}

function failed(error: unknown): void {
  if (error instanceof DOMException && error.name === "AbortError") return;
  if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
    // A refused key is forgotten, so that the next visit asks for another.
    sessionStorage.removeItem(KEY_STORAGE);
    key = "";
    ui.forget.hidden = true;
    ui.key.placeholder = "";
    say(`The API refused the key (${error.status}): ${error.message}`);
    ui.key.focus();
    return;
  }
  say(`Cannot load the data: ${error instanceof Error ? error.message : String(error)}`);
}

// --- Start ------------------------------------------------------------------------

async function start(): Promise<void> {
  ui.forget.hidden = key === "";
  if (key === "") {
    say("Enter your API key to start.");
    return;
  }
  ui.key.value = "";
  ui.key.placeholder = "a key is in use";
  say("Loading the datasets…");
  const controller = new AbortController();
  try {
    const { rows } = await getAll<Dataset>(
      collectionPath(apiBase, "Metadata", [["$select", "DOI,DatasetName,Citation,Licence,TemporalExtent"], ["$top", "1000"]]),
      controller.signal,
    );
    datasets = rows.sort((a, b) => a.DatasetName.localeCompare(b.DatasetName));
  } catch (error) {
    failed(error);
    return;
  }
  const wanted = new URLSearchParams(location.hash.slice(1)).get("dataset") ?? ui.dataset.value;
  ui.dataset.replaceChildren(new Option("All datasets", ""), ...datasets.map((dataset) => new Option(dataset.DatasetName, dataset.DOI)));
  ui.dataset.value = datasets.some((dataset) => dataset.DOI === wanted) ? wanted : "";
  datesOfDataset();
  await show(readSelection());
}

function datesOfDataset(): void {
  const extent = datasets.find((dataset) => dataset.DOI === ui.dataset.value)?.TemporalExtent;
  for (const input of [ui.from, ui.to]) {
    input.min = extent?.[0] ?? "";
    input.max = extent?.[1] ?? "";
  }
}

/** Shows a selection: the API's URLs and the citations at once, then the map, the count, the first page and the series. */
async function show(selection: Selection): Promise<void> {
  shown?.controller.abort();
  seriesController?.abort();
  const controller = new AbortController();
  const filter = buildFilter(selection);
  shown = { selection, filter, controller };
  delete document.body.dataset["shown"];
  writeHash(selection);
  showApi(filter);
  showCitations(selection.dataset);
  say("Loading…");
  ui.count.value = "…";
  ui.locationCount.value = "…";
  try {
    const found = await getAll<LocationRow>(
      collectionPath(apiBase, "Locations", [
        ["$filter", filter],
        ["$select", "Id,Name,DOI,Latitude,Longitude,LatitudeNormalized,LongitudeNormalized"],
        ["$top", String(LOCATIONS_PER_REQUEST)],
      ]),
      controller.signal,
    );
    locations = new Map(found.rows.map((row) => [row.Id, row]));
    located = true;
    ui.locationCount.value = `${found.complete ? "" : "more than "}${format(found.rows.length)}`;
    drawMap();
    listLocations();
    const counted = await getJson<{ "@odata.count": number }>(
      collectionPath(apiBase, "Observations", [["$filter", filter], ["$count", "true"]]),
      controller.signal,
    );
    total = counted["@odata.count"];
    ui.count.value = format(total);
    pagePaths = [];
    await showPage(collectionPath(apiBase, "Observations", [["$filter", filter], ["$select", OBSERVATION_FIELDS], ["$top", String(PAGE_SIZE)]]), controller.signal);
    say(`${format(total)} observations at ${format(locations.size)} locations.`);
    // What is on the page now, for people (the status) and for the browser test (the filter).
    document.body.dataset["shown"] = filter;
    if (!rendered) {
      rendered = true;
      performance.mark("explorer:first-render");
    }
    await plotSeries();
  } catch (error) {
    failed(error);
  }
}

function format(value: number): string {
  return value.toLocaleString("en-CA");
}

// --- The API box and the citations ------------------------------------------------

function showApi(filter: string): void {
  const url = `${location.origin}${collectionPath(apiBase, "Observations", [["$filter", filter], ["$select", OBSERVATION_FIELDS], ["$top", String(PAGE_SIZE)]])}`;
  ui.apiUrl.textContent = url;
  ui.apiCurl.textContent = curlCommand(url, key);
  ui.csvCurl.textContent = `${curlCommand(`${location.origin}${csvPath(filter)}`, key)} > records.csv`;
}

function csvPath(filter: string): string {
  const params: QueryParams = [["$filter", filter], ["$format", "csv"]];
  return collectionPath(apiBase, "Records", params);
}

function showCitations(doi: string): void {
  const chosen = doi === "" ? datasets : datasets.filter((dataset) => dataset.DOI === doi);
  ui.citations.replaceChildren(...chosen.map((dataset) => {
    const article = document.createElement("article");
    article.className = "citation";
    const heading = document.createElement("h3");
    heading.textContent = dataset.DatasetName;
    article.append(heading);
    if (dataset.Citation !== null && dataset.Citation !== "") article.append(paragraph(dataset.Citation));
    const doiLink = `https://doi.org/${dataset.DOI}`;
    article.append(paragraph("DOI: ", link(doiLink, doiLink)));
    if (dataset.Licence !== null && dataset.Licence !== "") {
      const licence = /^https?:\/\//.test(dataset.Licence) ? link(dataset.Licence, dataset.Licence) : dataset.Licence;
      article.append(paragraph("Licence: ", licence));
    }
    return article;
  }));
}

function paragraph(...parts: (string | Node)[]): HTMLParagraphElement {
  const p = document.createElement("p");
  p.append(...parts);
  return p;
}

function link(href: string, text: string): HTMLAnchorElement {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  a.rel = "noopener noreferrer";
  return a;
}

// --- Drawing the map -----------------------------------------------------------------

function svg<K extends keyof SVGElementTagNameMap>(name: K, attributes: Record<string, string | number>, text?: string): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG, name);
  for (const [attribute, value] of Object.entries(attributes)) element.setAttribute(attribute, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

function coordinates(row: LocationRow): { longitude: number; latitude: number } | undefined {
  const longitude = row.LongitudeNormalized ?? row.Longitude;
  const latitude = row.LatitudeNormalized ?? row.Latitude;
  return typeof longitude === "number" && typeof latitude === "number" && Number.isFinite(longitude) && Number.isFinite(latitude)
    ? { longitude, latitude }
    : undefined;
}

/** The size a drawing is drawn at: its width on the page now (in CSS pixels, so that 12px text is 12 px), and a height for it. */
function drawingSize(element: SVGSVGElement, shape: DrawingShape): { width: number; height: number } {
  const measured = Math.round(element.getBoundingClientRect().width);
  const width = measured > 0 ? measured : shape.fallbackWidth;
  return { width, height: Math.round(Math.min(shape.maxHeight, Math.max(shape.minHeight, width * shape.aspect))) };
}

/** Reads the basemap once, beside the API's requests (it is a file of the page, not the API's); the map is drawn again with it. */
async function loadBasemap(): Promise<void> {
  const path = meta("explorer:basemap");
  if (path === "") return;
  try {
    const response = await fetch(path, { credentials: "omit" });
    if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
    basemap = readBasemap(await response.json());
    // Drawn now only over the view it will keep: a selection's, or Canada's when no key will bring one.
    if (located || key === "") drawMap();
  } catch (error) {
    ui.mapNote.textContent = `The map's land and water did not load (${error instanceof Error ? error.message : String(error)}): the locations are drawn on the graticule alone.`;
  }
}

function drawMap(): void {
  const placed = [...locations.values()].flatMap((row) => {
    const at = coordinates(row);
    return at === undefined ? [] : [{ row, ...at }];
  });
  const size = drawingSize(ui.map, MAP_SHAPE);
  drawnWidths.set(ui.map, size.width);
  const view = fitView(placed, size.width, size.height);
  ui.map.setAttribute("viewBox", `0 0 ${size.width} ${size.height}`);
  const layers: SVGElement[] = [svg("rect", { class: "sea", width: size.width, height: size.height })];
  const ground = svg("g", { class: "basemap" });
  for (const layer of basemap) {
    const d = layerPath(layer, view);
    if (d !== "") ground.append(svg("path", { class: layer.name, d }));
  }
  layers.push(ground);
  // Tiles only for a selection's view: the view before one (Canada) would ask a tile server for tiles shown a moment.
  if (tileTemplate !== "" && located) {
    const tiles = svg("g", { class: "tiles" });
    for (const tile of coveringTiles(view)) {
      tiles.append(svg("image", { href: tileUrl(tileTemplate, tile), x: tile.left, y: tile.top, width: tile.size, height: tile.size }));
    }
    layers.push(tiles);
  }
  const grid = graticule(view);
  const lines = svg("g", { class: "graticule" });
  // A label only where it fits whole: it is 12px high and at most about 40px wide.
  for (const longitude of grid.longitudes) {
    const x = toPixels(view, mercator(longitude, 0)).x;
    lines.append(svg("line", { x1: x, y1: 0, x2: x, y2: size.height }));
    if (x + 3 + 40 <= size.width) lines.append(svg("text", { x: x + 3, y: size.height - 6 }, `${Math.abs(longitude)}°${longitude < 0 ? "W" : longitude > 0 ? "E" : ""}`));
  }
  for (const latitude of grid.latitudes) {
    const y = toPixels(view, mercator(0, latitude)).y;
    lines.append(svg("line", { x1: 0, y1: y, x2: size.width, y2: y }));
    if (y - 3 >= 12 && y - 3 <= size.height - 24) lines.append(svg("text", { x: 4, y: y - 3 }, `${Math.abs(latitude)}°${latitude < 0 ? "S" : latitude > 0 ? "N" : ""}`));
  }
  layers.push(lines);
  const dots = svg("g", { class: "locations" });
  const selected = Number(ui.seriesLocation.value);
  for (const { row, longitude, latitude } of placed) {
    const at = toPixels(view, mercator(longitude, latitude));
    const dot = svg("circle", { cx: at.x.toFixed(1), cy: at.y.toFixed(1), r: 6, class: row.Id === selected ? "location selected" : "location", "data-id": row.Id });
    dot.append(svg("title", {}, `${row.Name} (location ${row.Id})`));
    dots.append(dot);
  }
  layers.push(dots);
  const missing = locations.size - placed.length;
  const what = basemap.length === 0 ? "" : " over land, lakes, rivers and borders";
  ui.mapDescription.textContent = `${placed.length} locations on a Web Mercator map${what}${missing > 0 ? `; ${missing} without coordinates are not drawn` : ""}.`;
  ui.map.replaceChildren(ui.mapDescription, ...layers);
}

function listLocations(): void {
  const keep = ui.seriesLocation.value;
  const rows = [...locations.values()].sort((a, b) => a.Name.localeCompare(b.Name) || a.Id - b.Id);
  ui.seriesLocation.replaceChildren(new Option("Choose a location", ""), ...rows.map((row) => new Option(`${row.Name} (${row.Id})`, String(row.Id))));
  ui.seriesLocation.value = locations.has(Number(keep)) ? keep : "";
}

function chooseLocation(id: number): void {
  ui.seriesLocation.value = String(id);
  for (const dot of ui.map.querySelectorAll("circle.location")) dot.classList.toggle("selected", dot.getAttribute("data-id") === String(id));
  void plotSeries();
}

// --- The table ------------------------------------------------------------------------

async function showPage(path: string, signal: AbortSignal): Promise<void> {
  const page = await getJson<Page<ObservationRow>>(path, signal);
  pagePaths.push(path);
  nextPath = followLink(page["@odata.nextLink"], location.origin);
  ui.rows.replaceChildren(...page.value.map((row) => {
    const tr = document.createElement("tr");
    const cells = [
      String(row.Id),
      row.ActivityStartDate ?? "",
      row.ActivityStartTime ?? "",
      locations.get(row.LocationId)?.Name ?? String(row.LocationId),
      row.CharacteristicName ?? "",
      row.ResultValue === null ? "" : String(row.ResultValue),
      displayUnit(row.ResultUnit),
    ];
    cells.forEach((text, index) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (index === 5) td.className = "number";
      tr.append(td);
    });
    return tr;
  }));
  const first = (pagePaths.length - 1) * PAGE_SIZE;
  ui.pageInfo.textContent = page.value.length === 0 ? "No rows" : `Rows ${format(first + 1)}–${format(first + page.value.length)} of ${format(total)}`;
  ui.previous.disabled = pagePaths.length < 2;
  ui.next.disabled = nextPath === undefined;
}

async function turnPage(forward: boolean): Promise<void> {
  if (shown === undefined) return;
  let path: string | undefined;
  if (forward) {
    path = nextPath;
  } else {
    pagePaths.pop();
    path = pagePaths.pop();
  }
  if (path === undefined) return;
  ui.previous.disabled = true;
  ui.next.disabled = true;
  try {
    await showPage(path, shown.controller.signal);
  } catch (error) {
    failed(error);
  }
}

// --- Drawing the series ----------------------------------------------------------------

async function plotSeries(): Promise<void> {
  seriesController?.abort();
  const id = Number(ui.seriesLocation.value);
  const selection = shown?.selection;
  const place = locations.get(id);
  if (selection === undefined || ui.seriesLocation.value === "" || place === undefined) {
    clearSeries("Pick a characteristic and a location to plot its readings over time.");
    return;
  }
  if (selection.characteristic === "") {
    clearSeries("Pick a characteristic (and press Show) to plot this location's readings over time.");
    return;
  }
  const controller = new AbortController();
  seriesController = controller;
  ui.seriesNote.textContent = `Loading the ${selection.characteristic} readings of ${place.Name}…`;
  try {
    const { rows, complete } = await getAll<ObservationRow>(
      collectionPath(apiBase, "Observations", [
        ["$filter", buildFilter(selection, id)],
        ["$select", "Id,ActivityStartDate,ActivityStartTime,ResultValue,ResultUnit"],
        ["$top", String(SERIES_PER_REQUEST)],
      ]),
      controller.signal,
    );
    const points: SeriesPoint[] = [];
    const units = new Set<string>();
    for (const row of rows) {
      const time = readingTime(row.ActivityStartDate, row.ActivityStartTime);
      if (time === undefined || typeof row.ResultValue !== "number") continue;
      points.push({ time, value: row.ResultValue });
      const unit = displayUnit(row.ResultUnit);
      if (unit !== "") units.add(unit);
    }
    drawSeries(points, [...units], `${selection.characteristic} at ${place.Name}`);
    const left = rows.length - points.length;
    ui.seriesNote.textContent = `${format(points.length)} readings of ${selection.characteristic} at ${place.Name}` +
      (units.size === 0 ? "" : ` (${[...units].join(", ")})`) +
      (left > 0 ? `; ${format(left)} without a value are left out` : "") +
      (complete ? "." : "; only the first ones are drawn.");
  } catch (error) {
    if (!(error instanceof DOMException && error.name === "AbortError")) clearSeries(`Cannot load the series: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function clearSeries(note: string): void {
  plotted = undefined;
  ui.seriesDescription.textContent = "No series.";
  ui.series.replaceChildren(ui.seriesDescription);
  ui.series.removeAttribute("data-points");
  ui.series.setAttribute("hidden", "");
  ui.seriesNote.textContent = note;
}

function drawSeries(points: readonly SeriesPoint[], units: readonly string[], title: string): void {
  plotted = { points, units, title };
  // Shown first, so that its width on the page can be read.
  ui.series.removeAttribute("hidden");
  const size = drawingSize(ui.series, PLOT_SHAPE);
  drawnWidths.set(ui.series, size.width);
  const frame: PlotFrame = { ...size, ...PLOT_MARGIN };
  ui.series.setAttribute("viewBox", `0 0 ${size.width} ${size.height}`);
  const layout = layOutSeries(points, frame);
  const parts: SVGElement[] = [];
  const axes = svg("g", { class: "axes" });
  const bottom = frame.height - frame.bottom;
  axes.append(svg("line", { x1: frame.left, y1: bottom, x2: frame.width - frame.right, y2: bottom }));
  axes.append(svg("line", { x1: frame.left, y1: frame.top, x2: frame.left, y2: bottom }));
  for (const tick of layout.xTicks) {
    axes.append(svg("line", { class: "tick", x1: tick.x, y1: bottom, x2: tick.x, y2: bottom + 5 }));
    axes.append(svg("text", { x: tick.x, y: bottom + 20, "text-anchor": "middle" }, tick.label));
  }
  for (const tick of layout.yTicks) {
    axes.append(svg("line", { class: "grid", x1: frame.left, y1: tick.y, x2: frame.width - frame.right, y2: tick.y }));
    axes.append(svg("text", { x: frame.left - 6, y: tick.y + 4, "text-anchor": "end" }, tick.label));
  }
  if (units.length === 1) axes.append(svg("text", { x: frame.left + 4, y: frame.top - 6, class: "unit" }, units[0]!));
  parts.push(axes);
  if (layout.points.length > 1) {
    parts.push(svg("polyline", { class: "line", points: layout.points.map((point) => `${point.x.toFixed(1)},${point.y.toFixed(1)}`).join(" ") }));
  }
  const dots = svg("g", { class: "points" });
  for (const point of layout.points) dots.append(svg("circle", { class: "point", cx: point.x.toFixed(1), cy: point.y.toFixed(1), r: 2.5 }));
  parts.push(dots);
  ui.seriesDescription.textContent = points.length === 0
    ? `No readings of ${title}.`
    : `${points.length} readings of ${title}, from ${layout.min} to ${layout.max}${units.length === 1 ? ` ${units[0]}` : ""}.`;
  ui.series.replaceChildren(ui.seriesDescription, ...parts);
  ui.series.setAttribute("data-points", String(points.length));
}

/** Draws the map and the plot again when their width on the page changes (a turned phone, a resized window). */
function redrawOnResize(): void {
  let pending = false;
  const observer = new ResizeObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const changed = (element: SVGSVGElement): boolean => {
        const width = Math.round(element.getBoundingClientRect().width);
        return width > 0 && width !== drawnWidths.get(element);
      };
      if (changed(ui.map)) drawMap();
      if (plotted !== undefined && !ui.series.hasAttribute("hidden") && changed(ui.series)) drawSeries(plotted.points, plotted.units, plotted.title);
    });
  });
  observer.observe(ui.map);
  observer.observe(ui.series);
}

// --- Characteristic suggestions, copying and the CSV download ---------------------------

async function suggestCharacteristics(): Promise<void> {
  if (key === "") return;
  const selection = { ...readSelection(), characteristic: "" };
  const filter = buildFilter(selection);
  if (suggestionsFor === filter) return;
  suggestionsFor = filter;
  try {
    const page = await getJson<Page<{ CharacteristicName: string | null }>>(
      collectionPath(apiBase, "Observations", [["$filter", filter], ["$select", "CharacteristicName"], ["$top", String(SUGGESTION_SAMPLE)]]),
      new AbortController().signal,
    );
    const names = new Set<string>();
    for (const row of page.value) if (row.CharacteristicName !== null && row.CharacteristicName !== "") names.add(row.CharacteristicName);
    ui.suggestions.replaceChildren(...[...names].sort((a, b) => a.localeCompare(b)).map((name) => new Option(name)));
  } catch {
    suggestionsFor = undefined;
  }
}

async function copy(text: string, button: HTMLButtonElement): Promise<void> {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Cannot copy: select the text";
  }
  setTimeout(() => (button.textContent = label), 1500);
}

async function downloadCsv(): Promise<void> {
  if (shown === undefined) return;
  const { filter, selection } = shown;
  ui.download.disabled = true;
  say("Preparing the CSV…");
  try {
    const csv = await call(csvPath(filter), shown.controller.signal, (response) => response.blob(), "text/csv");
    const url = URL.createObjectURL(csv);
    const a = document.createElement("a");
    a.href = url;
    a.download = `${["records", selection.dataset, selection.region, selection.characteristic].filter((part) => part !== "").join("-").replace(/[^\w.-]+/g, "_")}.csv`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    say(`Downloaded ${a.download} (${format(csv.size)} bytes).`);
  } catch (error) {
    failed(error);
  } finally {
    ui.download.disabled = false;
  }
}

// --- Wiring ------------------------------------------------------------------------------

ui.keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const given = ui.key.value.trim();
  if (given === "") return;
  key = given;
  sessionStorage.setItem(KEY_STORAGE, key);
  suggestionsFor = undefined;
  void start();
});
ui.forget.addEventListener("click", () => {
  sessionStorage.removeItem(KEY_STORAGE);
  key = "";
  shown?.controller.abort();
  ui.key.placeholder = "";
  ui.key.focus();
  void start();
});
ui.filters.addEventListener("submit", (event) => {
  event.preventDefault();
  if (key === "") {
    say("Enter your API key first.");
    ui.key.focus();
    return;
  }
  void show(readSelection());
});
ui.dataset.addEventListener("change", datesOfDataset);
ui.characteristic.addEventListener("focus", () => void suggestCharacteristics());
ui.seriesLocation.addEventListener("change", () => chooseLocation(Number(ui.seriesLocation.value)));
ui.map.addEventListener("click", (event) => {
  const target = event.target;
  if (target instanceof SVGCircleElement && target.dataset["id"] !== undefined) chooseLocation(Number(target.dataset["id"]));
});
ui.previous.addEventListener("click", () => void turnPage(false));
ui.next.addEventListener("click", () => void turnPage(true));
ui.copyUrl.addEventListener("click", () => void copy(ui.apiUrl.textContent ?? "", ui.copyUrl));
ui.copyCurl.addEventListener("click", () => void copy(ui.apiCurl.textContent ?? "", ui.copyCurl));
ui.download.addEventListener("click", () => void downloadCsv());
ui.attribution.hidden = tileTemplate === "" || (ui.attribution.textContent ?? "").trim() === "";

readHash();
drawMap();
redrawOnResize();
void start();
void loadBasemap();

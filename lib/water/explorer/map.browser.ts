// The water-data explorer's map: Web Mercator, the view that fits the
// locations, the graticule, a tile server's tiles, the basemap of Natural
// Earth (land, lakes, rivers and borders) cut to the view, and the drawing of
// it all in the page's SVG, the locations on top. The pure part is exported
// for the browser test.

import { type Drawing, type DrawingShape, drawingSize, svg } from "./drawing.browser.ts";

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
    ? [
      mercator(DEFAULT_BOUNDS.west, DEFAULT_BOUNDS.north),
      mercator(DEFAULT_BOUNDS.east, DEFAULT_BOUNDS.south),
    ]
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
  const topLeft = unproject({
    x: view.center.x - view.width / 2 / view.scale,
    y: view.center.y - view.height / 2 / view.scale,
  });
  const bottomRight = unproject({
    x: view.center.x + view.width / 2 / view.scale,
    y: view.center.y + view.height / 2 / view.scale,
  });
  const span = Math.max(
    bottomRight.longitude - topLeft.longitude,
    topLeft.latitude - bottomRight.latitude,
  );
  const step = [1, 2, 5, 10, 20, 30].find((candidate) => span / candidate <= 6) ?? 30;
  const range = (from: number, to: number): number[] => {
    const lines: number[] = [];
    for (let value = Math.ceil(from / step) * step; value <= to; value += step) lines.push(value);
    return lines;
  };
  return {
    step,
    longitudes: range(Math.max(-180, topLeft.longitude), Math.min(180, bottomRight.longitude)),
    latitudes: range(
      Math.max(-MAX_LATITUDE, bottomRight.latitude),
      Math.min(MAX_LATITUDE, topLeft.latitude),
    ),
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
  for (
    let y = Math.max(0, Math.floor(top * count));
    y <= Math.min(count - 1, Math.floor(bottom * count));
    y++
  ) {
    for (
      let x = Math.max(0, Math.floor(left * count));
      x <= Math.min(count - 1, Math.floor(right * count));
      x++
    ) {
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
export function tileUrl(
  template: string,
  tile: { readonly z: number; readonly x: number; readonly y: number },
): string {
  return template.replaceAll("{z}", String(tile.z)).replaceAll("{x}", String(tile.x)).replaceAll(
    "{y}",
    String(tile.y),
  );
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
    const { name, kind, shapes } = typeof layer === "object" && layer !== null
      ? (layer as Record<string, unknown>)
      : {};
    if (
      typeof name !== "string" || (kind !== "area" && kind !== "line") || !Array.isArray(shapes)
    ) {
      throw new TypeError(
        `Cannot read the basemap: layer ${
          index + 1
        } needs a name, a kind ("area" or "line") and shapes`,
      );
    }
    return { name, kind, shapes: shapes.map((shape: unknown) => readShape(shape, units, name)) };
  });
}

function readShape(shape: unknown, units: number, layer: string): BasemapShape {
  if (
    !Array.isArray(shape) || shape.length % 2 !== 0 ||
    !shape.every((value) => Number.isInteger(value))
  ) {
    throw new TypeError(
      `Cannot read the basemap: a shape of "${layer}" is not a list of whole-number steps`,
    );
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
    if (shape.maxX < west || shape.minX > east || shape.maxY < north || shape.minY > south) {
      continue;
    }
    if (
      (shape.maxX - shape.minX) * view.scale < step && (shape.maxY - shape.minY) * view.scale < step
    ) continue;
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
  const edges: [
    (x: number, y: number) => boolean,
    (ax: number, ay: number, bx: number, by: number) => [number, number],
  ][] = [
    [
      (x) => x >= rect.left,
      (ax, ay, bx, by) => [rect.left, ay + ((by - ay) * (rect.left - ax)) / (bx - ax)],
    ],
    [
      (x) => x <= rect.right,
      (ax, ay, bx, by) => [rect.right, ay + ((by - ay) * (rect.right - ax)) / (bx - ax)],
    ],
    [
      (_x, y) => y >= rect.top,
      (ax, ay, bx, by) => [ax + ((bx - ax) * (rect.top - ay)) / (by - ay), rect.top],
    ],
    [
      (_x, y) => y <= rect.bottom,
      (ax, ay, bx, by) => [ax + ((bx - ax) * (rect.bottom - ay)) / (by - ay), rect.bottom],
    ],
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
    for (
      const [p, q] of [[-dx, ax - rect.left], [dx, rect.right - ax], [-dy, ay - rect.top], [
        dy,
        rect.bottom - ay,
      ]] as const
    ) {
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

// --- The drawing ---------------------------------------------------------------

/** The map's height for its width. */
const MAP_SHAPE: DrawingShape = {
  aspect: 0.625,
  minHeight: 260,
  maxHeight: 560,
  fallbackWidth: 800,
};

/** A location the map draws. */
export interface MapPlace {
  readonly id: number;
  readonly name: string;
  readonly longitude: number;
  readonly latitude: number;
  /** Its colour (`#rrggbb`, e.g. of its mean), in place of the page's; none for the page's. */
  readonly fill?: string;
  /** Its tooltip, in place of its name and id. */
  readonly title?: string;
}

/** What the map shows. */
export interface MapScene {
  /** The locations with coordinates. */
  readonly places: readonly MapPlace[];
  /** How many locations have none (said in the description, not drawn). */
  readonly unplaced: number;
  /** The basemap's layers; none until it has loaded. */
  readonly basemap: readonly BasemapLayer[];
  /** A tile server's URL template to draw tiles from, or empty for none. */
  readonly tiles: string;
  /** The location drawn as chosen, if any. */
  readonly selected: number | undefined;
}

/**
 * Draws the map at its width on the page: the sea, the basemap, the tiles,
 * the graticule with its labels (where they fit whole) and the locations
 * (a `circle.location` each, with its id in `data-id`, its colour in `fill`
 * when it has one, its tooltip in a `title`), in that order, the
 * last on top; its description says what is drawn.
 * @param map the drawing
 * @param scene what to draw
 * @returns the width it was drawn at, in CSS pixels
 */
export function drawMap(map: Drawing, scene: MapScene): number {
  const size = drawingSize(map.svg, MAP_SHAPE);
  const view = fitView(scene.places, size.width, size.height);
  map.svg.setAttribute("viewBox", `0 0 ${size.width} ${size.height}`);
  const layers: SVGElement[] = [
    svg("rect", { class: "sea", width: size.width, height: size.height }),
  ];
  const ground = svg("g", { class: "basemap" });
  for (const layer of scene.basemap) {
    const d = layerPath(layer, view);
    if (d !== "") ground.append(svg("path", { class: layer.name, d }));
  }
  layers.push(ground);
  if (scene.tiles !== "") {
    const tiles = svg("g", { class: "tiles" });
    for (const tile of coveringTiles(view)) {
      tiles.append(
        svg("image", {
          href: tileUrl(scene.tiles, tile),
          x: tile.left,
          y: tile.top,
          width: tile.size,
          height: tile.size,
        }),
      );
    }
    layers.push(tiles);
  }
  const grid = graticule(view);
  const lines = svg("g", { class: "graticule" });
  // A label only where it fits whole: it is 12px high and at most about 40px wide.
  for (const longitude of grid.longitudes) {
    const x = toPixels(view, mercator(longitude, 0)).x;
    lines.append(svg("line", { x1: x, y1: 0, x2: x, y2: size.height }));
    if (x + 3 + 40 <= size.width) {
      lines.append(
        svg(
          "text",
          { x: x + 3, y: size.height - 6 },
          `${Math.abs(longitude)}°${longitude < 0 ? "W" : longitude > 0 ? "E" : ""}`,
        ),
      );
    }
  }
  for (const latitude of grid.latitudes) {
    const y = toPixels(view, mercator(0, latitude)).y;
    lines.append(svg("line", { x1: 0, y1: y, x2: size.width, y2: y }));
    if (y - 3 >= 12 && y - 3 <= size.height - 24) {
      lines.append(
        svg(
          "text",
          { x: 4, y: y - 3 },
          `${Math.abs(latitude)}°${latitude < 0 ? "S" : latitude > 0 ? "N" : ""}`,
        ),
      );
    }
  }
  layers.push(lines);
  const dots = svg("g", { class: "locations" });
  for (const place of scene.places) {
    const at = toPixels(view, mercator(place.longitude, place.latitude));
    const dot = svg("circle", {
      cx: at.x.toFixed(1),
      cy: at.y.toFixed(1),
      r: 6,
      class: place.id === scene.selected ? "location selected" : "location",
      "data-id": place.id,
      ...(place.fill === undefined ? {} : { fill: place.fill }),
    });
    dot.append(svg("title", {}, place.title ?? `${place.name} (location ${place.id})`));
    dots.append(dot);
  }
  layers.push(dots);
  const what = scene.basemap.length === 0 ? "" : " over land, lakes, rivers and borders";
  const missing = scene.unplaced > 0 ? `; ${scene.unplaced} without coordinates are not drawn` : "";
  map.description.textContent =
    `${scene.places.length} locations on a Web Mercator map${what}${missing}.`;
  map.svg.replaceChildren(map.description, ...layers);
  return size.width;
}

/**
 * Marks one location of a drawn map as chosen (and no other).
 * @param map the drawing
 * @param id the location's id
 */
export function markChosen(map: Drawing, id: number): void {
  for (const dot of map.svg.querySelectorAll("circle.location")) {
    dot.classList.toggle("selected", dot.getAttribute("data-id") === String(id));
  }
}

/**
 * Reads the basemap file of the page (a file of the page's own, not the API's: no key).
 * @param path the file's path, e.g. `/explorer/basemap.json`
 * @throws {Error} when it does not load
 * @throws {TypeError} when it is not a basemap
 */
export async function fetchBasemap(path: string): Promise<BasemapLayer[]> {
  const response = await fetch(path, { credentials: "omit" });
  if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
  return readBasemap(await response.json());
}

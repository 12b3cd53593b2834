import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { normalizeCoordinates } from "../../lib/water/store/normalize_coordinates.ts";

describe("normalizeCoordinates()", () => {
  it("passes WGS84 and NAD83 through", () => {
    assert.deepEqual(normalizeCoordinates(45.1, -63.2, "WGS84"), {
      latitude: 45.1,
      longitude: -63.2,
    });
    assert.deepEqual(normalizeCoordinates(45.1, -63.2, "NAD83"), {
      latitude: 45.1,
      longitude: -63.2,
    });
  });

  it("passes unknown systems and missing coordinates through", () => {
    assert.deepEqual(normalizeCoordinates(45.1, -63.2, "UNKWN"), {
      latitude: 45.1,
      longitude: -63.2,
    });
    assert.deepEqual(normalizeCoordinates(45.1, -63.2, null), { latitude: 45.1, longitude: -63.2 });
    const missing = normalizeCoordinates(Number.NaN, -63.2, "NAD27");
    assert.ok(Number.isNaN(missing.latitude));
  });

  it("shifts NAD27 by tens of metres, in the published direction", () => {
    // NAD27 to WGS84 in eastern Canada moves points a little south and east.
    const shifted = normalizeCoordinates(45, -75, "NAD27");
    const dLat = (shifted.latitude - 45) * 111_000;
    const dLon = (shifted.longitude + 75) * 111_000 * Math.cos((45 * Math.PI) / 180);
    assert.ok(dLat > -20 && dLat < 20, `north shift ${dLat} m`);
    assert.ok(dLon > 20 && dLon < 120, `east shift ${dLon} m`);
  });

  it("shifts WGS72 by a few metres at most", () => {
    const shifted = normalizeCoordinates(50, -120, "WGS72");
    assert.ok(Math.abs(shifted.latitude - 50) * 111_000 < 20);
    assert.ok(Math.abs(shifted.longitude + 120) * 111_000 < 20);
  });
});

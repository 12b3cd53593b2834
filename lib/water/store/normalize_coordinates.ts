/** A datum the normalizer can shift to WGS84. */
interface Datum {
  readonly a: number;
  readonly f: number;
  readonly dx: number;
  readonly dy: number;
  readonly dz: number;
}

const WGS84_A = 6378137;
const WGS84_F = 1 / 298.257223563;

/**
 * Datum shifts to WGS84 (NIMA TR8350.2): NAD27 on the Clarke 1866 ellipsoid
 * with the mean shift for Canada, and WGS72. NAD83 is taken as WGS84 (they
 * differ by about a metre); OTHER and UNKWN are passed through unchanged.
 */
const DATUMS: ReadonlyMap<string, Datum> = new Map([
  ["NAD27", { a: 6378206.4, f: 1 / 294.9786982, dx: -10, dy: 158, dz: 187 }],
  ["WGS72", { a: 6378135, f: 1 / 298.26, dx: 0, dy: 0, dz: 4.5 }],
]);

/** Coordinates in WGS84. */
export interface NormalizedCoordinates {
  readonly latitude: number;
  readonly longitude: number;
}

/**
 * Converts a location's coordinates to WGS84 with the abridged Molodensky
 * transformation, which is good to a few metres for NAD27 in Canada. Results
 * are rounded to 7 decimals (about a centimetre).
 * @param latitude degrees
 * @param longitude degrees
 * @param crs the location's horizontal coordinate reference system
 * @returns the WGS84 coordinates
 * @example
 * ```ts
 * normalizeCoordinates(45, -75, "NAD83"); // { latitude: 45, longitude: -75 }
 * ```
 */
export function normalizeCoordinates(
  latitude: number,
  longitude: number,
  crs: string | null,
): NormalizedCoordinates {
  const datum = crs === null ? undefined : DATUMS.get(crs);
  if (datum === undefined || Number.isNaN(latitude) || Number.isNaN(longitude)) {
    return { latitude, longitude };
  }
  const phi = (latitude * Math.PI) / 180;
  const lambda = (longitude * Math.PI) / 180;
  const sinPhi = Math.sin(phi);
  const cosPhi = Math.cos(phi);
  const sinLambda = Math.sin(lambda);
  const cosLambda = Math.cos(lambda);
  const e2 = 2 * datum.f - datum.f * datum.f;
  const w = Math.sqrt(1 - e2 * sinPhi * sinPhi);
  const m = (datum.a * (1 - e2)) / (w * w * w);
  const n = datum.a / w;
  const da = WGS84_A - datum.a;
  const df = WGS84_F - datum.f;
  const dPhi = (-datum.dx * sinPhi * cosLambda - datum.dy * sinPhi * sinLambda + datum.dz * cosPhi +
    (datum.a * df + datum.f * da) * Math.sin(2 * phi)) / m;
  const dLambda = (-datum.dx * sinLambda + datum.dy * cosLambda) / (n * cosPhi);
  return {
    latitude: round7(latitude + (dPhi * 180) / Math.PI),
    longitude: round7(longitude + (dLambda * 180) / Math.PI),
  };
}

function round7(x: number): number {
  return Math.round(x * 1e7) / 1e7;
}

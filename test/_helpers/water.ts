import { join } from "node:path";
import { createFetchHandler, type Handler, indexApiKeys, parseApiKey } from "../../lib/http/mod.ts";
import {
  createWaterService,
  type DatasetLoadResult,
  formatCsvRow,
  loadDatasets,
  type LoadReport,
  readDatasetMetadata,
  StoreBuilder,
  type StoreSource,
  type WaterServiceOptions,
  type WaterStore,
} from "../../lib/water/mod.ts";
import { DATASTREAM_CSV_COLUMNS } from "../../lib/water/fields.ts";

/** The demo data committed in `data/datasets`. */
export const DEMO_DIR = join(import.meta.dirname, "..", "..", "data", "datasets");
/** The key every test handler accepts. */
export const TEST_KEY = "test-key";

let demo: Promise<{ store: WaterStore; report: LoadReport }> | undefined;

/** Loads the demo data once per test process. */
export function demoStore(): Promise<{ store: WaterStore; report: LoadReport }> {
  demo ??= loadDatasets(DEMO_DIR);
  return demo;
}

/** The header of fixture data files: the standard columns plus the two time-zone columns. */
export const FIXTURE_HEADER: readonly string[] = [
  ...DATASTREAM_CSV_COLUMNS,
  "ActivityStartTimeZone",
  "ActivityEndTimeZone",
];

/** Writes a fixture data row: required fields get defaults, the rest are empty unless given. */
export function fixtureRow(values: Readonly<Record<string, string | number>>): string {
  const defaults: Record<string, string> = {
    DatasetName: "Fixture",
    MonitoringLocationID: "L1",
    MonitoringLocationName: "Lake One",
    MonitoringLocationLatitude: "45.5",
    MonitoringLocationLongitude: "-63.5",
    MonitoringLocationHorizontalCoordinateReferenceSystem: "WGS84",
    MonitoringLocationType: "Lake/Pond",
    ActivityType: "Field Msr/Obs",
    ActivityMediaName: "Surface Water",
    ActivityStartDate: "2020-06-01",
    CharacteristicName: "pH",
    ResultValueType: "Actual",
  };
  return formatCsvRow(FIXTURE_HEADER.map((name) => {
    const value = values[name] ?? defaults[name];
    return value === undefined ? null : String(value);
  }));
}

/** A fixture dataset: folder, metadata object and data file text. */
export interface FixtureDataset {
  readonly folder: string;
  readonly metadata: Readonly<Record<string, unknown>>;
  readonly csv: string;
}

/**
 * Builds a store from fixture datasets without touching the disk, feeding
 * each data file in chunks of `chunk` bytes.
 */
export function buildStore(
  datasets: readonly FixtureDataset[],
  chunk = 1 << 20,
): { store: WaterStore; results: DatasetLoadResult[] } {
  const builder = new StoreBuilder();
  const results: DatasetLoadResult[] = [];
  for (const dataset of datasets) {
    const input = readDatasetMetadata(JSON.stringify(dataset.metadata), dataset.folder);
    builder.beginDataset(input, `${dataset.folder}/data.csv`);
    const bytes = new TextEncoder().encode(dataset.csv);
    for (let i = 0; i < bytes.length; i += chunk) builder.push(bytes.subarray(i, i + chunk));
    results.push(builder.endDataset());
  }
  return { store: builder.finish(), results };
}

/** A water service over a store (or live datasets) that accepts {@linkcode TEST_KEY}, with limits off unless given. */
export function waterHandler(
  store: WaterStore | StoreSource,
  options: Partial<WaterServiceOptions> = {},
): Handler {
  return createWaterService(store, {
    keys: indexApiKeys([parseApiKey("test", TEST_KEY)]),
    now: () => 0,
    ratePerSecond: 0,
    maxConcurrent: 0,
    ...options,
  });
}

/** A JSON page of the water API. */
export interface Page {
  value: Record<string, unknown>[];
  "@odata.nextLink"?: string;
}

/** What {@linkcode call} returns. */
export interface CallResult {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly text: string;
  json(): unknown;
}

/** Options of {@linkcode call}. */
export interface CallOptions {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly origin?: string;
  readonly body?: string;
}

/**
 * Calls a handler through the Web `fetch` adapter (no socket) with a request
 * for `target` (path and raw query) on `origin`, sending {@linkcode TEST_KEY}
 * unless headers say otherwise, and reads the whole body, streamed or not.
 */
export async function call(
  handler: Handler,
  target: string,
  options: CallOptions = {},
): Promise<CallResult> {
  const response = await createFetchHandler(handler)(
    new Request(`${options.origin ?? "http://localhost:8000"}${target}`, {
      method: options.method ?? "GET",
      headers: options.headers ?? { "x-api-key": TEST_KEY },
      ...(options.body === undefined ? {} : { body: options.body }),
    }),
  );
  const text = await response.text();
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return { status: response.status, headers, text, json: () => JSON.parse(text) };
}

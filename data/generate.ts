/**
 * Seeded, deterministic generator of DataStream-shaped demo data: one folder
 * per dataset with a `metadata.json` and a `data.csv` in the DataStream
 * schema. The same options always give byte-identical files.
 *
 * Run `node --import tsx data/generate.ts` to write the committed demo data to
 * `data/datasets/`; flags `--out`, `--seed`, `--datasets`, `--locations`,
 * `--observations`, `--first-year` and `--years` override the defaults.
 * @module
 */

import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { finished } from "node:stream/promises";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { createLogger, type Logger, Progress } from "../lib/log/mod.ts";
import { DATASTREAM_CSV_COLUMNS } from "../lib/water/fields.ts";
import { formatCsvRow } from "../lib/water/mod.ts";
import { type RegionId } from "../lib/water/vocabulary.ts";

/** Log lines on stderr (the summary goes to stdout): JSON when stderr is not a terminal. */
function consoleLog(): Logger {
  return createLogger({
    write: (line) => process.stderr.write(`${line}\n`),
    now: Date.now,
    format: process.stderr.isTTY ? "pretty" : "json",
  });
}

/** Options of {@linkcode generateDatasets}. */
export interface GenerateOptions {
  /** Folder that receives one subfolder per dataset. */
  out: string;
  /**
   * Seed of the pseudo-random generator.
   * @default {20240601}
   */
  seed?: number;
  /**
   * Number of datasets.
   * @default {8}
   */
  datasets?: number;
  /**
   * Number of monitoring locations, spread over the datasets.
   * @default {200}
   */
  locations?: number;
  /**
   * Number of observations (CSV rows), spread over the locations.
   * @default {120000}
   */
  observations?: number;
  /**
   * First calendar year of the data.
   * @default {2012}
   */
  firstYear?: number;
  /**
   * Number of calendar years covered.
   * @default {13}
   */
  years?: number;
  /** Told how far the writing has come after each chunk written: rows written of all, and bytes. */
  onProgress?: (
    state: { readonly rows: number; readonly totalRows: number; readonly bytes: number },
  ) => void;
}

/** What {@linkcode generateDatasets} wrote. */
export interface GenerateSummary {
  readonly datasets: number;
  readonly locations: number;
  readonly observations: number;
  /** Number of distinct CharacteristicName values written. */
  readonly characteristicNames: number;
  /** Bytes written, CSV and JSON together. */
  readonly bytes: number;
}

const DEFAULTS = {
  seed: 20240601,
  datasets: 8,
  locations: 200,
  observations: 120_000,
  firstYear: 2012,
  years: 13,
} as const;

/** The CSV header: the standard 40 columns with the two activity time zones after their times. */
const HEADER: readonly string[] = DATASTREAM_CSV_COLUMNS.flatMap((name) =>
  name === "ActivityStartTime" || name === "ActivityEndTime" ? [name, `${name}Zone`] : [name]
);

// The first 11 columns describe the location; a row is that cached prefix
// followed by the 31 activity and result columns.
const LOCATION_COLUMNS = 11;
const TAIL_COLUMNS = HEADER.length - LOCATION_COLUMNS;
const CHUNK_CHARS = 1 << 20;
const DAY_MS = 86_400_000;

// ---------------------------------------------------------------------------
// Randomness

type Random = () => number;

/** mulberry32: a small, fast 32-bit PRNG giving floats in [0, 1). */
function createRandom(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Mixes two integers into a well-spread 32-bit seed. */
function mixSeed(a: number, b: number): number {
  let h = Math.imul((a ^ 0x9e3779b9) >>> 0, 0x85ebca6b) ^ Math.imul(b + 0x632be5ab, 0xc2b2ae35);
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d);
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b);
  return (h ^ (h >>> 16)) >>> 0;
}

function pick<T>(random: Random, values: readonly T[]): T {
  const value = values[Math.floor(random() * values.length)];
  if (value === undefined) throw new RangeError("Cannot pick from an empty list");
  return value;
}

function pickWeighted<T>(random: Random, entries: readonly (readonly [T, number])[]): T {
  let total = 0;
  for (const [, weight] of entries) total += weight;
  let r = random() * total;
  for (const [value, weight] of entries) {
    r -= weight;
    if (r < 0) return value;
  }
  const last = entries[entries.length - 1];
  if (last === undefined) throw new RangeError("Cannot pick from an empty list");
  return last[0];
}

/** An approximately normal deviate (mean 0, sd 1) from three uniforms. */
function gauss(random: Random): number {
  return (random() + random() + random() - 1.5) * 2;
}

function hex(random: Random, digits: number): string {
  let out = "";
  for (let i = 0; i < digits; i++) out += Math.floor(random() * 16).toString(16);
  return out;
}

/** A version-4-shaped UUID drawn from `random`. */
function uuid(random: Random): string {
  const variant = (8 + Math.floor(random() * 4)).toString(16);
  return `${hex(random, 8)}-${hex(random, 4)}-4${hex(random, 3)}-${variant}${hex(random, 3)}-` +
    hex(random, 12);
}

const LOWER = "abcdefghijklmnopqrstuvwxyz";
const LOWER_DIGITS = "abcdefghijklmnopqrstuvwxyz0123456789";

function doi(random: Random): string {
  let suffix = "";
  for (let i = 0; i < 4; i++) suffix += pick(random, [...LOWER_DIGITS]);
  suffix += "-";
  for (let i = 0; i < 2; i++) suffix += pick(random, [...LOWER]);
  suffix += String(Math.floor(random() * 100)).padStart(2, "0");
  return `10.25976/${suffix}`;
}

// ---------------------------------------------------------------------------
// Number formatting

/** Rounds to `decimals` places and prints the shortest form ("12.5", never "-0"). */
function formatNumber(value: number, decimals: number): string {
  if (!Number.isFinite(value)) throw new RangeError(`Cannot format number: ${value}`);
  return String(Number(value.toFixed(decimals)));
}

// ---------------------------------------------------------------------------
// Characteristics

interface MethodSpec {
  readonly id: string;
  readonly context: string;
  readonly name: string;
}

const M = {
  tp: { id: "4500-P E", context: "APHA", name: "Phosphorus by ascorbic acid colorimetry" },
  tn: { id: "4500-N C", context: "APHA", name: "Total nitrogen by persulfate digestion" },
  ic: { id: "300.0", context: "USEPA", name: "Inorganic anions by ion chromatography" },
  nh3: { id: "4500-NH3 G", context: "APHA", name: "Ammonia by automated phenate method" },
  op: { id: "365.1", context: "USEPA", name: "Phosphorus by semi-automated colorimetry" },
  tkn: { id: "351.2", context: "USEPA", name: "Total Kjeldahl nitrogen, semi-automated" },
  icp: { id: "200.7", context: "USEPA", name: "Metals and trace elements by ICP-AES" },
  icpms: { id: "200.8", context: "USEPA", name: "Trace elements by ICP-MS" },
  hg: { id: "1631", context: "USEPA", name: "Mercury by purge and trap, and CVAFS" },
  alk: { id: "2320 B", context: "APHA", name: "Alkalinity by titration" },
  hard: { id: "2340 B", context: "APHA", name: "Hardness by calculation" },
  tds: { id: "2540 C", context: "APHA", name: "Total dissolved solids dried at 180 C" },
  tss: { id: "2540 D", context: "APHA", name: "Total suspended solids dried at 103-105 C" },
  doc: { id: "5310 B", context: "APHA", name: "Organic carbon by high-temperature combustion" },
  chla: { id: "445.0", context: "USEPA", name: "Chlorophyll a and pheophytin a by fluorescence" },
  coli: { id: "9223 B", context: "APHA", name: "Enzyme substrate coliform test (Colilert)" },
  mc: { id: "546", context: "USEPA", name: "Total microcystins and nodularins by ELISA" },
  pcb: { id: "1668C", context: "USEPA", name: "Chlorinated biphenyl congeners by HRGC/HRMS" },
  svoc: { id: "8270E", context: "USEPA", name: "Semivolatile organic compounds by GC/MS" },
  oc: { id: "8081B", context: "USEPA", name: "Organochlorine pesticides by GC" },
  ssc: { id: "D3977-97", context: "ASTM", name: "Suspended-sediment concentration" },
} as const satisfies Record<string, MethodSpec>;

type CharacteristicGroup =
  | "field"
  | "nutrients"
  | "ions"
  | "metals"
  | "bacteria"
  | "organics"
  | "other";

interface CharacteristicSpec {
  readonly name: string;
  readonly group: CharacteristicGroup;
  readonly unit: string;
  readonly low: number;
  readonly high: number;
  readonly decimals: number;
  /** Whether values spread on a log scale (concentrations) rather than linearly. */
  readonly log: boolean;
  /** Correlation with the summer peak, -1..1. */
  readonly season: number;
  /** Typical position in the range, 0..1, before site, season and noise. */
  readonly center: number;
  readonly speciation: string | null;
  readonly fraction: string | null;
  readonly detectionLimit: number | null;
  readonly method: MethodSpec | null;
  readonly calculated: boolean;
  /** The characteristic measures a depth, so the activity carries none (schema 3.0 rule). */
  readonly depth: boolean;
  readonly groundwater: boolean;
}

interface CharacteristicInput {
  readonly name: string;
  readonly unit: string;
  readonly range: readonly [number, number];
  readonly decimals: number;
  readonly log?: boolean;
  readonly season?: number;
  readonly center?: number;
  readonly speciation?: string;
  readonly fraction?: string;
  readonly dl?: number;
  readonly method?: MethodSpec;
  readonly calculated?: boolean;
  readonly depth?: boolean;
  readonly groundwater?: boolean;
}

function characteristics(
  group: CharacteristicGroup,
  inputs: readonly CharacteristicInput[],
): CharacteristicSpec[] {
  return inputs.map((c) => ({
    name: c.name,
    group,
    unit: c.unit,
    low: c.range[0],
    high: c.range[1],
    decimals: c.decimals,
    log: c.log ?? false,
    season: c.season ?? 0,
    center: c.center ?? 0.5,
    speciation: c.speciation ?? null,
    fraction: c.fraction ?? null,
    detectionLimit: c.dl ?? null,
    method: c.method ?? null,
    calculated: c.calculated ?? false,
    depth: c.depth ?? false,
    groundwater: c.groundwater ?? group !== "bacteria",
  }));
}

const CHARACTERISTICS: readonly CharacteristicSpec[] = [
  ...characteristics("field", [
    {
      name: "Temperature, water",
      unit: "deg C",
      range: [-0.5, 28],
      decimals: 1,
      season: 1,
      center: 0.42,
    },
    { name: "pH", unit: "None", range: [6, 9], decimals: 2, season: 0.15 },
    {
      name: "Dissolved oxygen (DO)",
      unit: "mg/L",
      range: [4, 14.5],
      decimals: 2,
      season: -0.8,
      center: 0.56,
      groundwater: false,
    },
    { name: "Specific conductance", unit: "uS/cm", range: [20, 1500], decimals: 0, log: true },
    {
      name: "Dissolved oxygen saturation",
      unit: "%",
      range: [60, 125],
      decimals: 1,
      season: 0.1,
      calculated: true,
      groundwater: false,
    },
    { name: "Conductivity", unit: "uS/cm", range: [15, 1300], decimals: 0, log: true },
    { name: "Turbidity", unit: "NTU", range: [0.2, 150], decimals: 1, log: true, season: 0.2 },
    {
      name: "Temperature, air",
      unit: "deg C",
      range: [-30, 32],
      decimals: 1,
      season: 1,
      center: 0.55,
    },
    { name: "Oxidation reduction potential (ORP)", unit: "mV", range: [-50, 400], decimals: 0 },
    { name: "Salinity", unit: "PSU", range: [0.1, 32], decimals: 2, log: true, season: 0.1 },
    {
      name: "Depth, Secchi disk depth",
      unit: "m",
      range: [0.3, 8],
      decimals: 2,
      log: true,
      season: -0.3,
      depth: true,
      groundwater: false,
    },
  ]),
  ...characteristics("nutrients", [
    {
      name: "Total Phosphorus, mixed forms",
      unit: "mg/L",
      range: [0.004, 0.6],
      decimals: 3,
      log: true,
      season: 0.3,
      speciation: "as P",
      fraction: "Total",
      dl: 0.002,
      method: M.tp,
    },
    {
      name: "Total Nitrogen, mixed forms",
      unit: "mg/L",
      range: [0.1, 4],
      decimals: 2,
      log: true,
      season: 0.1,
      speciation: "as N",
      fraction: "Total",
      dl: 0.02,
      method: M.tn,
    },
    {
      name: "Nitrate",
      unit: "mg/L",
      range: [0.003, 6],
      decimals: 3,
      log: true,
      season: -0.4,
      speciation: "as N",
      fraction: "Dissolved",
      dl: 0.005,
      method: M.ic,
    },
    {
      name: "Nitrite",
      unit: "mg/L",
      range: [0.0005, 0.1],
      decimals: 4,
      log: true,
      speciation: "as N",
      fraction: "Dissolved",
      dl: 0.002,
      method: M.ic,
    },
    {
      name: "Ammonia",
      unit: "mg/L",
      range: [0.003, 0.8],
      decimals: 3,
      log: true,
      season: -0.2,
      speciation: "as N",
      fraction: "Total",
      dl: 0.005,
      method: M.nh3,
    },
    {
      name: "Orthophosphate",
      unit: "mg/L",
      range: [0.001, 0.2],
      decimals: 3,
      log: true,
      season: 0.2,
      speciation: "as P",
      fraction: "Dissolved",
      dl: 0.003,
      method: M.op,
    },
    {
      name: "Soluble Reactive Phosphorus (SRP)",
      unit: "mg/L",
      range: [0.001, 0.25],
      decimals: 3,
      log: true,
      season: 0.2,
      speciation: "as P",
      fraction: "Dissolved",
      dl: 0.003,
      method: M.op,
    },
    {
      name: "Kjeldahl nitrogen",
      unit: "mg/L",
      range: [0.05, 3],
      decimals: 2,
      log: true,
      season: 0.2,
      speciation: "as N",
      fraction: "Total",
      dl: 0.05,
      method: M.tkn,
    },
  ]),
  ...characteristics("ions", [
    {
      name: "Chloride",
      unit: "mg/L",
      range: [0.3, 300],
      decimals: 1,
      log: true,
      fraction: "Dissolved",
      dl: 0.5,
      method: M.ic,
    },
    {
      name: "Sulfate",
      unit: "mg/L",
      range: [0.5, 400],
      decimals: 1,
      log: true,
      fraction: "Dissolved",
      dl: 0.5,
      method: M.ic,
    },
    {
      name: "Fluoride",
      unit: "mg/L",
      range: [0.01, 1.5],
      decimals: 2,
      log: true,
      fraction: "Dissolved",
      dl: 0.02,
      method: M.ic,
    },
    {
      name: "Calcium",
      unit: "mg/L",
      range: [1, 150],
      decimals: 2,
      log: true,
      fraction: "Dissolved",
      method: M.icp,
    },
    {
      name: "Magnesium",
      unit: "mg/L",
      range: [0.3, 60],
      decimals: 2,
      log: true,
      fraction: "Dissolved",
      method: M.icp,
    },
    {
      name: "Sodium",
      unit: "mg/L",
      range: [0.5, 150],
      decimals: 2,
      log: true,
      fraction: "Dissolved",
      method: M.icp,
    },
    {
      name: "Potassium",
      unit: "mg/L",
      range: [0.1, 12],
      decimals: 2,
      log: true,
      fraction: "Dissolved",
      dl: 0.1,
      method: M.icp,
    },
    {
      name: "Alkalinity, total",
      unit: "mg/L",
      range: [5, 300],
      decimals: 1,
      log: true,
      speciation: "as CaCO3",
      method: M.alk,
    },
    {
      name: "Total hardness",
      unit: "mg/L",
      range: [8, 450],
      decimals: 1,
      log: true,
      speciation: "as CaCO3",
      calculated: true,
      method: M.hard,
    },
    {
      name: "Total dissolved solids",
      unit: "mg/L",
      range: [15, 1000],
      decimals: 0,
      log: true,
      dl: 10,
      method: M.tds,
    },
    {
      name: "Silica",
      unit: "mg/L",
      range: [0.5, 25],
      decimals: 2,
      log: true,
      speciation: "as SiO2",
      fraction: "Dissolved",
      method: M.icp,
    },
  ]),
  ...characteristics("metals", [
    {
      name: "Aluminum",
      unit: "ug/L",
      range: [2, 800],
      decimals: 1,
      log: true,
      season: 0.1,
      fraction: "Total",
      dl: 1,
      method: M.icpms,
    },
    {
      name: "Iron",
      unit: "ug/L",
      range: [10, 3000],
      decimals: 0,
      log: true,
      fraction: "Total",
      dl: 5,
      method: M.icpms,
    },
    {
      name: "Manganese",
      unit: "ug/L",
      range: [1, 500],
      decimals: 1,
      log: true,
      fraction: "Total",
      dl: 0.5,
      method: M.icpms,
    },
    {
      name: "Copper",
      unit: "ug/L",
      range: [0.1, 15],
      decimals: 2,
      log: true,
      fraction: "Dissolved",
      dl: 0.2,
      method: M.icpms,
    },
    {
      name: "Zinc",
      unit: "ug/L",
      range: [0.5, 60],
      decimals: 1,
      log: true,
      fraction: "Total",
      dl: 1,
      method: M.icpms,
    },
    {
      name: "Lead",
      unit: "ug/L",
      range: [0.005, 3],
      decimals: 3,
      log: true,
      fraction: "Total",
      dl: 0.02,
      method: M.icpms,
    },
    {
      name: "Arsenic",
      unit: "ug/L",
      range: [0.1, 25],
      decimals: 2,
      log: true,
      fraction: "Total",
      dl: 0.1,
      method: M.icpms,
    },
    {
      name: "Cadmium",
      unit: "ug/L",
      range: [0.002, 0.3],
      decimals: 3,
      log: true,
      fraction: "Total",
      dl: 0.005,
      method: M.icpms,
    },
    {
      name: "Cesium",
      unit: "ug/L",
      range: [0.001, 0.1],
      decimals: 3,
      log: true,
      fraction: "Total",
      dl: 0.005,
      method: M.icpms,
    },
    {
      name: "Mercury",
      unit: "ng/L",
      range: [0.1, 8],
      decimals: 2,
      log: true,
      fraction: "Total",
      dl: 0.3,
      method: M.hg,
    },
  ]),
  ...characteristics("bacteria", [
    {
      name: "Escherichia coli",
      unit: "MPN/100mL",
      range: [0.5, 2400],
      decimals: 0,
      log: true,
      season: 0.6,
      dl: 1,
      method: M.coli,
    },
    {
      name: "Total Coliform",
      unit: "MPN/100mL",
      range: [10, 2420],
      decimals: 0,
      log: true,
      season: 0.5,
      dl: 1,
      method: M.coli,
    },
  ]),
  ...characteristics("organics", [
    {
      name: "2,2',4,4'-Tetrachlorobiphenyl",
      unit: "ng/L",
      range: [0.002, 0.15],
      decimals: 4,
      log: true,
      dl: 0.02,
      method: M.pcb,
    },
    {
      name: "3,3'-Dichlorobenzidine",
      unit: "ug/L",
      range: [0.005, 0.2],
      decimals: 3,
      log: true,
      dl: 0.05,
      method: M.svoc,
    },
    {
      name: "p,p'-DDT",
      unit: "ng/L",
      range: [0.01, 0.5],
      decimals: 3,
      log: true,
      dl: 0.1,
      method: M.oc,
    },
    {
      name: "o,p'-DDE",
      unit: "ng/L",
      range: [0.005, 0.3],
      decimals: 3,
      log: true,
      dl: 0.05,
      method: M.oc,
    },
    {
      name: "Benzo[a]pyrene",
      unit: "ug/L",
      range: [0.001, 0.05],
      decimals: 4,
      log: true,
      dl: 0.005,
      method: M.svoc,
    },
  ]),
  ...characteristics("other", [
    {
      name: "Total suspended solids",
      unit: "mg/L",
      range: [0.5, 250],
      decimals: 1,
      log: true,
      season: 0.2,
      dl: 1,
      method: M.tss,
    },
    {
      name: "Suspended Sediment Concentration (SSC)",
      unit: "mg/L",
      range: [1, 400],
      decimals: 1,
      log: true,
      season: 0.2,
      dl: 1,
      method: M.ssc,
    },
    {
      name: "Organic carbon",
      unit: "mg/L",
      range: [1, 25],
      decimals: 2,
      log: true,
      season: 0.3,
      fraction: "Dissolved",
      dl: 0.5,
      method: M.doc,
    },
    {
      name: "Chlorophyll a, corrected for pheophytin",
      unit: "ug/L",
      range: [0.2, 60],
      decimals: 2,
      log: true,
      season: 0.6,
      dl: 0.1,
      method: M.chla,
      groundwater: false,
    },
    {
      name: "Microcystin",
      unit: "ug/L",
      range: [0.05, 8],
      decimals: 2,
      log: true,
      season: 0.8,
      dl: 0.15,
      method: M.mc,
      groundwater: false,
    },
  ]),
];

/** Per characteristic: precomputed scale, rounding and detection-limit text. */
interface CharacteristicRuntime {
  readonly spec: CharacteristicSpec;
  readonly base: number;
  readonly span: number;
  readonly dlText: string | null;
}

const RUNTIME: readonly CharacteristicRuntime[] = CHARACTERISTICS.map((spec) => ({
  spec,
  base: spec.log ? Math.log(spec.low) : spec.low,
  span: spec.log ? Math.log(spec.high) - Math.log(spec.low) : spec.high - spec.low,
  dlText: spec.detectionLimit === null ? null : formatNumber(spec.detectionLimit, 6),
}));

function indexOfCharacteristic(name: string): number {
  const index = CHARACTERISTICS.findIndex((c) => c.name === name);
  if (index < 0) throw new RangeError(`Cannot find characteristic: ${name}`);
  return index;
}

function groupIndexes(group: CharacteristicGroup): number[] {
  const out: number[] = [];
  CHARACTERISTICS.forEach((c, i) => {
    if (c.group === group) out.push(i);
  });
  return out;
}

const FIELD_CORE = ["Temperature, water", "pH", "Dissolved oxygen (DO)", "Specific conductance"]
  .map(indexOfCharacteristic);
const GROUNDWATER_FIELD = [
  "Temperature, water",
  "pH",
  "Specific conductance",
  "Oxidation reduction potential (ORP)",
].map(indexOfCharacteristic);
const WATER_TEMPERATURE = indexOfCharacteristic("Temperature, water");
const DISSOLVED_OXYGEN = indexOfCharacteristic("Dissolved oxygen (DO)");

// ---------------------------------------------------------------------------
// Dataset templates

interface Box {
  readonly province: RegionId;
  readonly lat: readonly [number, number];
  readonly lon: readonly [number, number];
}

type LabGroup = Exclude<CharacteristicGroup, "field">;

interface DatasetTemplate {
  readonly name: string;
  readonly slug: string;
  readonly idPrefix: string;
  readonly organization: string;
  readonly uploadOrganization: string;
  readonly email: string;
  readonly hub: RegionId;
  readonly boxes: readonly Box[];
  /** Standard-time UTC offset in hours, or null to report times in UTC (`Z`). */
  readonly utcOffset: number | null;
  readonly dst: boolean;
  /** Months (1-12) sampled in full. */
  readonly months: readonly number[];
  /** Months sampled sparsely (every `winterStride`-th day). */
  readonly sparseMonths: readonly number[];
  readonly sparseStride: number;
  readonly types: readonly (readonly [string, number])[];
  readonly waters: readonly string[];
  readonly fieldExtras: readonly string[];
  readonly fieldExtraRate: number;
  readonly lab: readonly (readonly [LabGroup, number])[];
  readonly yearStartOffset: number;
  readonly yearEndOffset: number;
  readonly progress: "onGoing" | "completed";
  readonly maintenance: string;
  readonly licence: string;
  readonly version: string;
  readonly status: string;
  readonly crs: readonly (readonly [string, number])[];
  readonly timeRate: number;
  readonly timeZoneRate: number;
  readonly seconds: boolean;
  readonly continuousRate: number;
  readonly laboratory: string;
  readonly labPrefix: string;
  readonly notDetected: string;
  readonly limitType: string;
  readonly bottle: string;
  readonly locationWeight: number;
  readonly intensity: number;
  readonly interleave: boolean;
  readonly abstract: string;
  readonly collection: string;
  readonly processing: string;
  readonly funding: string;
  readonly url: string;
  readonly otherSources: string | null;
  readonly keywords: readonly string[];
  readonly topics: readonly string[];
}

const ODC_BY = "https://opendatacommons.org/licenses/by/1-0/";
const ODC_PDDL = "https://opendatacommons.org/licenses/pddl/1-0/";
const DISCLAIMER = "Data are provided as is, without warranty of any kind. Users are " +
  "responsible for checking that the data suit their purpose.";

const TEMPLATES: readonly DatasetTemplate[] = [
  {
    name: "Fraser Valley Streamkeepers",
    slug: "fraser-valley-streamkeepers",
    idPrefix: "FVS",
    organization: "Fraser Valley Streamkeepers Society",
    uploadOrganization: "Fraser Valley Streamkeepers Society",
    email: "data@fvstreamkeepers.example.org",
    hub: "hub.pacific",
    boxes: [{ province: "admin.4.ca.bc", lat: [49.02, 49.45], lon: [-122.95, -121.45] }],
    utcOffset: -8,
    dst: true,
    months: [4, 5, 6, 7, 8, 9, 10, 11],
    sparseMonths: [1, 2, 3, 12],
    sparseStride: 2,
    types: [["River/Stream", 1]],
    waters: [
      "Salmon River",
      "Bertrand Creek",
      "Nathan Creek",
      "Chilliwack River",
      "Stave River",
      "Kanaka Creek",
      "Mary's Creek",
      "Hope Slough",
      "Brunette River",
      "Yorkson Creek",
    ],
    fieldExtras: ["Dissolved oxygen saturation", "Turbidity", "Temperature, air"],
    fieldExtraRate: 0.6,
    lab: [["bacteria", 0.5], ["nutrients", 0.3], ["other", 0.2]],
    yearStartOffset: 0,
    yearEndOffset: 0,
    progress: "onGoing",
    maintenance: "monthly",
    licence: ODC_BY,
    version: "2.3.0",
    status: "Validated",
    crs: [["WGS84", 0.8], ["NAD83", 0.2]],
    timeRate: 0.95,
    timeZoneRate: 0.9,
    seconds: false,
    continuousRate: 0,
    laboratory: "Coast Analytical",
    labPrefix: "LMEL",
    notDetected: "Below Detection/Quantification Limit",
    limitType: "Method Detection Level",
    bottle: "Water Bottle",
    locationWeight: 1.3,
    intensity: 1,
    interleave: false,
    abstract: "Volunteer streamkeepers measure water temperature, dissolved oxygen, pH and " +
      "conductivity in salmon-bearing streams of the lower Fraser Valley, with bacteria and " +
      "nutrient samples at selected sites.",
    collection: "Monthly site visits with a calibrated multiparameter sonde; grab samples " +
      "shipped on ice to an accredited laboratory within 24 hours.",
    processing: "Sonde readings are checked against calibration logs; values outside the " +
      "instrument range are removed.",
    funding: "Pacific Salmon Foundation; community donations",
    url: "https://www.example.org/fraser-valley-streamkeepers",
    otherSources: null,
    keywords: ["streamkeepers", "salmon habitat", "community-based monitoring", "Fraser River"],
    topics: ["inlandWaters"],
  },
  {
    name: "Lake Huron Nearshore Monitoring",
    slug: "lake-huron-nearshore",
    idPrefix: "LHS",
    organization: "Huron Shores Conservation Partnership",
    uploadOrganization: "Huron Shores Conservation Partnership",
    email: "monitoring@huronshores.example.org",
    hub: "hub.greatlakes",
    boxes: [{ province: "admin.4.ca.on", lat: [43.25, 45.2], lon: [-81.95, -81.25] }],
    utcOffset: -5,
    dst: true,
    months: [4, 5, 6, 7, 8, 9, 10, 11],
    sparseMonths: [],
    sparseStride: 1,
    types: [["Great Lake", 0.45], ["River/Stream", 0.55]],
    waters: [
      "Lake Huron",
      "Maitland River",
      "Bayfield River",
      "Saugeen River",
      "Penetangore River",
      "Pine River",
      "Nine Mile River",
      "Ausable River",
      "Parkhill Creek",
      "Sauble River",
    ],
    fieldExtras: ["Dissolved oxygen saturation", "Turbidity", "Depth, Secchi disk depth"],
    fieldExtraRate: 0.5,
    lab: [["nutrients", 0.8], ["ions", 0.4], ["metals", 0.3], ["organics", 0.2], ["other", 0.5]],
    yearStartOffset: 2,
    yearEndOffset: 0,
    progress: "onGoing",
    maintenance: "annually",
    licence: ODC_BY,
    version: "1.4.0",
    status: "Provisional",
    crs: [["NAD83", 0.9], ["WGS84", 0.1]],
    timeRate: 0.9,
    timeZoneRate: 0.95,
    seconds: false,
    continuousRate: 0,
    laboratory: "Great Lakes Labs",
    labPrefix: "GLAS",
    notDetected: "Not Detected",
    limitType: "Reporting Limit",
    bottle: "Van Dorn Bottle",
    locationWeight: 1.2,
    intensity: 1.1,
    interleave: true,
    abstract: "Nearshore and tributary monitoring along the southeast shore of Lake Huron, " +
      "tracking nutrients, algae and contaminants that affect beaches and drinking water.",
    collection: "Nearshore stations are sampled from a boat at fixed depths; tributaries are " +
      "sampled by wading at the river mouth. Samples are analysed by an accredited laboratory.",
    processing: "Laboratory results are loaded as reported, with detection limits; field QC " +
      "duplicates are kept and flagged by activity type.",
    funding: "Canada-Ontario Agreement on Great Lakes Water Quality and Ecosystem Health",
    url: "https://www.example.org/huron-shores/monitoring",
    otherSources: "Provincial Water Quality Monitoring Network stations on the same rivers",
    keywords: ["Lake Huron", "nearshore", "nutrients", "algal blooms", "tributaries"],
    topics: ["inlandWaters", "environment"],
  },
  {
    name: "Mersey River Watershed Monitoring",
    slug: "mersey-river-watershed",
    idPrefix: "MRW",
    organization: "Mersey Tobeatic Watershed Stewards",
    uploadOrganization: "Atlantic Water Network",
    email: "mersey.data@example.org",
    hub: "hub.atlantic",
    boxes: [{ province: "admin.4.ca.ns", lat: [44.02, 44.55], lon: [-65.35, -64.68] }],
    utcOffset: -4,
    dst: true,
    months: [4, 5, 6, 7, 8, 9, 10, 11],
    sparseMonths: [1, 2, 3, 12],
    sparseStride: 3,
    types: [["River/Stream", 0.7], ["Lake/Pond", 0.3]],
    waters: [
      "Mersey River",
      "Medway River",
      "Lake Rossignol",
      "Kejimkujik Lake",
      "Tupper Lake",
      "Herring Cove Brook",
      "Broad River",
      "Port Joli Brook",
      "Big Dam Lake",
      "Cobrielle Lake",
    ],
    fieldExtras: ["Dissolved oxygen saturation", "Conductivity", "Temperature, air"],
    fieldExtraRate: 0.5,
    lab: [["ions", 0.5], ["nutrients", 0.5], ["metals", 0.4], ["other", 0.3]],
    yearStartOffset: 0,
    yearEndOffset: 1,
    progress: "onGoing",
    maintenance: "asNeeded",
    licence: ODC_BY,
    version: "1.0.0",
    status: "Accepted",
    crs: [["WGS84", 0.75], ["NAD83", 0.15], ["NAD27", 0.1]],
    timeRate: 0.8,
    timeZoneRate: 0.85,
    seconds: false,
    continuousRate: 0,
    laboratory: "Maritime Testing",
    labPrefix: "METL",
    notDetected: "Below Detection/Quantification Limit",
    limitType: "Reporting Limit",
    bottle: "Water Bottle",
    locationWeight: 0.9,
    intensity: 0.9,
    interleave: false,
    abstract: "Community monitoring of acidification recovery and water chemistry in the " +
      "Mersey and Medway watersheds of southwestern Nova Scotia.",
    collection: "Grab samples and sonde readings at fixed stations, year round where access " +
      "allows.",
    processing: "Results below the reporting limit are reported with the limit and no value.",
    funding: "Environmental Damages Fund; Nova Scotia Habitat Conservation Fund",
    url: "https://www.example.org/mersey-tobeatic/water",
    otherSources: null,
    keywords: ["acid rain", "aluminum", "Kejimkujik", "watershed", "community-based monitoring"],
    topics: ["inlandWaters"],
  },
  {
    name: "Northumberland Strait Estuaries",
    slug: "northumberland-strait-estuaries",
    idPrefix: "NSE",
    organization: "Northumberland Strait Estuaries Coalition",
    uploadOrganization: "Northumberland Strait Estuaries Coalition",
    email: "estuaries@nsecoalition.example.org",
    hub: "hub.atlantic",
    boxes: [
      { province: "admin.4.ca.nb", lat: [46.18, 46.95], lon: [-65.1, -64.45] },
      { province: "admin.4.ca.pe", lat: [46.2, 46.68], lon: [-64.05, -62.3] },
    ],
    utcOffset: -4,
    dst: true,
    months: [5, 6, 7, 8, 9, 10],
    sparseMonths: [],
    sparseStride: 1,
    types: [["Estuary", 0.6], ["River/Stream", 0.4]],
    waters: [
      "Shediac River",
      "Scoudouc River",
      "Cocagne River",
      "Bouctouche River",
      "Wheatley River",
      "Dunk River",
      "Montague River",
      "West River",
      "Tracadie Bay",
      "Bedeque Bay",
    ],
    fieldExtras: ["Salinity", "Dissolved oxygen saturation", "Turbidity"],
    fieldExtraRate: 0.8,
    lab: [["nutrients", 0.6], ["bacteria", 0.4]],
    yearStartOffset: 4,
    yearEndOffset: 0,
    progress: "onGoing",
    maintenance: "annually",
    licence: ODC_PDDL,
    version: "3.0.1",
    status: "Preliminary",
    crs: [["WGS84", 0.7], ["NAD83", 0.3]],
    timeRate: 0.95,
    timeZoneRate: 0.9,
    seconds: false,
    continuousRate: 0,
    laboratory: "Gulf Analytical",
    labPrefix: "GRAL",
    notDetected: "Not Detected",
    limitType: "Method Detection Level",
    bottle: "Kemmerer Bottle",
    locationWeight: 1,
    intensity: 1,
    interleave: false,
    abstract: "Estuary health monitoring across New Brunswick and Prince Edward Island " +
      "estuaries of the Northumberland Strait: salinity, oxygen, nutrients and bacteria.",
    collection: "Biweekly summer surveys at high tide; profiles at estuary stations and grab " +
      "samples for nutrients and bacteria.",
    processing: "Sonde data averaged over one minute at each depth; laboratory data as " +
      "reported.",
    funding: "Fisheries and Oceans Canada Coastal Restoration Fund",
    url: "https://www.example.org/northumberland-estuaries",
    otherSources: "Shellfish sanitation survey results (not included)",
    keywords: ["estuary", "anoxia", "nutrient loading", "Northumberland Strait"],
    topics: ["inlandWaters", "oceans"],
  },
  {
    name: "Red River Basin Citizen Science",
    slug: "red-river-basin-citizen-science",
    idPrefix: "RRB",
    organization: "Red River Basin Watershed Network",
    uploadOrganization: "Lake Winnipeg Foundation",
    email: "redriver@example.org",
    hub: "hub.lakewinnipeg",
    boxes: [{ province: "admin.4.ca.mb", lat: [49.02, 50.35], lon: [-97.45, -96.65] }],
    utcOffset: -6,
    dst: true,
    months: [4, 5, 6, 7, 8, 9, 10],
    sparseMonths: [1, 2, 3, 11, 12],
    sparseStride: 5,
    types: [["River/Stream", 0.8], ["Wetland", 0.2]],
    waters: [
      "Red River",
      "Rat River",
      "Seine River",
      "La Salle River",
      "Morris River",
      "Roseau River",
      "Joubert Creek",
      "Netley Marsh",
      "Cooks Creek",
      "Marsh River",
    ],
    fieldExtras: ["Turbidity", "Temperature, air"],
    fieldExtraRate: 0.4,
    lab: [["nutrients", 0.85], ["ions", 0.3], ["other", 0.5]],
    yearStartOffset: 1,
    yearEndOffset: 0,
    progress: "onGoing",
    maintenance: "asNeeded",
    licence: ODC_BY,
    version: "1.2.0",
    status: "Validated",
    crs: [["WGS84", 0.85], ["NAD83", 0.15]],
    timeRate: 0.9,
    timeZoneRate: 0.9,
    seconds: false,
    continuousRate: 0,
    laboratory: "Prairie Water Lab",
    labPrefix: "PWQL",
    notDetected: "Below Detection/Quantification Limit",
    limitType: "Sample Detection Limit",
    bottle: "Water Bottle",
    locationWeight: 1,
    intensity: 1,
    interleave: false,
    abstract: "Citizen scientists sample phosphorus and nitrogen across the Red River basin " +
      "to find nutrient hotspots that feed Lake Winnipeg algal blooms.",
    collection: "Volunteers collect grab samples during spring melt and after rain events; " +
      "samples are frozen and analysed in batches.",
    processing: "Phosphorus results are checked against duplicate samples; outliers are " +
      "reviewed with the volunteer.",
    funding: "Lake Winnipeg Basin Program; private foundations",
    url: "https://www.example.org/red-river-basin",
    otherSources: null,
    keywords: ["phosphorus", "Lake Winnipeg", "nutrient hotspots", "citizen science"],
    topics: ["inlandWaters"],
  },
  {
    name: "Qu'Appelle Valley Lakes Monitoring",
    slug: "qu-appelle-valley-lakes",
    idPrefix: "QVL",
    organization: "Qu'Appelle Valley Lakes Stewardship Association",
    uploadOrganization: "Lake Winnipeg Foundation",
    email: "quappelle.lakes@example.org",
    hub: "hub.lakewinnipeg",
    boxes: [{ province: "admin.4.ca.sk", lat: [50.52, 50.88], lon: [-104.55, -102.35] }],
    utcOffset: -6,
    dst: false,
    months: [5, 6, 7, 8, 9],
    sparseMonths: [],
    sparseStride: 1,
    types: [["Lake/Pond", 0.7], ["Reservoir", 0.15], ["River/Stream", 0.15]],
    waters: [
      "Pasqua Lake",
      "Echo Lake",
      "Mission Lake",
      "Katepwa Lake",
      "Crooked Lake",
      "Round Lake",
      "Buffalo Pound Lake",
      "Qu'Appelle River",
      "Last Mountain Lake",
      "Wascana Creek",
    ],
    fieldExtras: ["Depth, Secchi disk depth", "Dissolved oxygen saturation", "Turbidity"],
    fieldExtraRate: 0.7,
    lab: [["nutrients", 0.7], ["other", 0.8], ["ions", 0.4]],
    yearStartOffset: 3,
    yearEndOffset: 2,
    progress: "completed",
    maintenance: "notPlanned",
    licence: ODC_PDDL,
    version: "1.0.0",
    status: "Final",
    crs: [["WGS84", 1]],
    timeRate: 0.85,
    timeZoneRate: 0.8,
    seconds: false,
    continuousRate: 0,
    laboratory: "SWT Centre",
    labPrefix: "SWTC",
    notDetected: "Below Detection/Quantification Limit",
    limitType: "Method Detection Level",
    bottle: "Van Dorn Bottle",
    locationWeight: 0.7,
    intensity: 1,
    interleave: false,
    abstract: "Summer monitoring of the Qu'Appelle valley lakes for algal blooms, " +
      "cyanotoxins and nutrients.",
    collection: "Open-water season sampling at deep stations with vertical profiles; toxin " +
      "samples at public beaches.",
    processing: "Chlorophyll corrected for pheophytin; microcystin by ELISA.",
    funding: "Saskatchewan Lake Stewardship Grant",
    url: "https://www.example.org/quappelle-lakes",
    otherSources: null,
    keywords: ["cyanobacteria", "microcystin", "prairie lakes", "chlorophyll"],
    topics: ["inlandWaters", "environment"],
  },
  {
    name: "Great Slave Lake Tributaries",
    slug: "great-slave-lake-tributaries",
    idPrefix: "GSL",
    organization: "Great Slave Lake Community Monitoring Program",
    uploadOrganization: "Mackenzie DataStream",
    email: "gsl.monitoring@example.org",
    hub: "hub.mackenzie",
    boxes: [{ province: "admin.4.ca.nt", lat: [60.82, 62.48], lon: [-116.95, -112.6] }],
    utcOffset: null,
    dst: false,
    months: [6, 7, 8, 9],
    sparseMonths: [3, 4],
    sparseStride: 7,
    types: [["River/Stream", 0.6], ["Lake/Pond", 0.4]],
    waters: [
      "Yellowknife River",
      "Hay River",
      "Slave River",
      "Buffalo River",
      "Taltson River",
      "Cameron River",
      "Prosperous Lake",
      "Frame Lake",
      "Kam Lake",
      "Great Slave Lake",
    ],
    fieldExtras: ["Dissolved oxygen saturation", "Conductivity", "Turbidity"],
    fieldExtraRate: 0.5,
    lab: [["ions", 0.5], ["metals", 0.7], ["other", 0.3]],
    yearStartOffset: 0,
    yearEndOffset: 4,
    progress: "completed",
    maintenance: "notPlanned",
    licence: ODC_BY,
    version: "2.0.0",
    status: "Validated",
    crs: [["NAD83", 0.6], ["WGS84", 0.3], ["NAD27", 0.1]],
    timeRate: 1,
    timeZoneRate: 1,
    seconds: true,
    continuousRate: 0.15,
    laboratory: "Northern Waters Lab",
    labPrefix: "NWAL",
    notDetected: "Below Detection/Quantification Limit",
    limitType: "Reporting Limit",
    bottle: "Water Bottle",
    locationWeight: 0.8,
    intensity: 1.3,
    interleave: false,
    abstract: "Communities around Great Slave Lake monitor tributaries for metals, including " +
      "arsenic and mercury from legacy mining, and run temperature loggers in summer.",
    collection: "Summer grab samples and under-ice sampling in late winter; continuous " +
      "temperature and oxygen loggers at selected stations. Times are in UTC.",
    processing: "Logger records are trimmed to the deployment period; laboratory data are " +
      "reported with detection limits.",
    funding: "NWT Cumulative Impact Monitoring Program",
    url: "https://www.example.org/great-slave-monitoring",
    otherSources: "Mine effluent monitoring reports",
    keywords: ["arsenic", "mercury", "loggers", "Mackenzie Basin", "community-based monitoring"],
    topics: ["inlandWaters"],
  },
  {
    name: "Bow River Groundwater Study",
    slug: "bow-river-groundwater",
    idPrefix: "BRG",
    organization: "Bow River Basin Council",
    uploadOrganization: "Bow River Basin Council",
    email: "data@bowriverbasin.example.org",
    hub: "hub.lakewinnipeg",
    boxes: [{ province: "admin.4.ca.ab", lat: [50.9, 51.28], lon: [-115.15, -113.45] }],
    utcOffset: -7,
    dst: true,
    months: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
    sparseMonths: [],
    sparseStride: 1,
    types: [["Well", 0.45], ["Piezometer", 0.15], ["River/Stream", 0.4]],
    waters: [
      "Bow River",
      "Elbow River",
      "Jumpingpound Creek",
      "Nose Creek",
      "Fish Creek",
      "Ghost River",
      "Kananaskis River",
      "Highwood River",
      "Sheep River",
      "Pine Creek",
    ],
    fieldExtras: ["Oxidation reduction potential (ORP)", "Turbidity", "Conductivity"],
    fieldExtraRate: 0.4,
    lab: [["ions", 0.7], ["nutrients", 0.4], ["metals", 0.5], ["organics", 0.3]],
    yearStartOffset: 5,
    yearEndOffset: 0,
    progress: "onGoing",
    maintenance: "quarterly",
    licence: ODC_BY,
    version: "1.1.0",
    status: "Provisional",
    crs: [["NAD83", 0.7], ["WGS84", 0.3]],
    timeRate: 0.9,
    timeZoneRate: 0.9,
    seconds: false,
    continuousRate: 0,
    laboratory: "Foothills Labs",
    labPrefix: "FEL",
    notDetected: "Not Detected",
    limitType: "Reporting Limit",
    bottle: "Pump/Submersible",
    locationWeight: 1.1,
    intensity: 0.9,
    interleave: false,
    abstract: "Paired groundwater wells and river stations along the Bow River, measuring " +
      "major ions, nutrients, metals and trace organics to study river-aquifer exchange.",
    collection: "Wells are purged until field parameters stabilise, then sampled with a " +
      "submersible pump; river stations are grab sampled.",
    processing: "Ion balances are checked for each sample; results failing the check are " +
      "re-analysed.",
    funding: "Alberta Environment and Protected Areas; municipal partners",
    url: "https://www.example.org/bow-river-basin/groundwater",
    otherSources: "Provincial groundwater observation well network",
    keywords: ["groundwater", "wells", "aquifer", "Bow River", "trace organics"],
    topics: ["inlandWaters", "geoscientificInformation"],
  },
];

const WELL_TYPES = new Set(["Well", "Piezometer"]);
const DEEP_TYPES = new Set(["Great Lake", "Lake/Pond", "Estuary", "Reservoir"]);
const NAME_SUFFIXES = [
  "at Bridge",
  "Upstream",
  "Downstream",
  "near Mouth",
  "at Gauge",
  "at Culvert",
  "above Confluence",
  "North Basin",
  "South Basin",
  "at Beach",
  "east branch",
];

const LAB_QC_TYPES = [
  "Quality Control Sample-Field Blank",
  "Quality Control Sample-Blind Duplicate",
  "Quality Control Sample-Field Replicate",
  "Quality Control Sample-Lab Duplicate",
  "Quality Control Sample-Trip Blank",
] as const;
const BLANK_TYPES = new Set<string>([
  "Quality Control Sample-Field Blank",
  "Quality Control Sample-Trip Blank",
]);

// Comments exercise CSV quoting: commas, double quotes and line breaks.
const FIELD_COMMENTS = [
  "Sample collected after heavy rain, flow elevated",
  "Probe recalibrated on site before reading",
  'Field note: "ice along margins", reading taken from the bank',
  "Wildfire smoke present, air quality advisory in effect",
  "Beaver dam upstream;\nwater level higher than usual",
];
const LAB_COMMENTS = [
  "Bottle broken in transit;\nre-sampled the next day",
  "Value exceeds the CCME guideline, lab confirmed",
  "Hold time exceeded by 2 hours",
  'Received at 14 C, "cooler" temperature above 10 C',
];

// ---------------------------------------------------------------------------
// Calendar

interface Calendar {
  /** Epoch day of January 1 of the first year. */
  readonly epoch: number;
  readonly firstYear: number;
  readonly lastYear: number;
  /** `YYYY-MM-DD` per day index (day index 0 is `epoch`), with a margin after the last year. */
  readonly dates: readonly string[];
  readonly months: Uint8Array;
  readonly years: Uint16Array;
  readonly daylight: Uint8Array;
  /** cos of the day of year, peaking in mid July: 1 in summer, -1 in winter. */
  readonly season: Float64Array;
}

function nthSunday(year: number, month: number, n: number): number {
  const first = Date.UTC(year, month, 1) / DAY_MS;
  const weekday = new Date(first * DAY_MS).getUTCDay();
  return first + ((7 - weekday) % 7) + (n - 1) * 7;
}

function createCalendar(firstYear: number, lastYear: number): Calendar {
  const epoch = Date.UTC(firstYear, 0, 1) / DAY_MS;
  const end = Date.UTC(lastYear + 1, 0, 1) / DAY_MS + 40;
  const length = end - epoch;
  const dates: string[] = [];
  const months = new Uint8Array(length);
  const years = new Uint16Array(length);
  const daylight = new Uint8Array(length);
  const season = new Float64Array(length);
  let dstStart = 0;
  let dstEnd = 0;
  let dstYear = -1;
  for (let i = 0; i < length; i++) {
    const date = new Date((epoch + i) * DAY_MS);
    const year = date.getUTCFullYear();
    if (year !== dstYear) {
      // Canada since 2007: second Sunday of March to first Sunday of November.
      dstYear = year;
      dstStart = nthSunday(year, 2, 2);
      dstEnd = nthSunday(year, 10, 1);
    }
    dates.push(date.toISOString().slice(0, 10));
    months[i] = date.getUTCMonth() + 1;
    years[i] = year;
    daylight[i] = epoch + i >= dstStart && epoch + i < dstEnd ? 1 : 0;
    const dayOfYear = epoch + i - Date.UTC(year, 0, 1) / DAY_MS;
    season[i] = Math.cos((2 * Math.PI * (dayOfYear - 198)) / 365.25);
  }
  return { epoch, firstYear, lastYear, dates, months, years, daylight, season };
}

const TIMES: readonly string[] = Array.from(
  { length: 1440 },
  (_, m) => `${String(Math.floor(m / 60)).padStart(2, "0")}:${String(m % 60).padStart(2, "0")}`,
);
const SECONDS: readonly string[] = Array.from({ length: 60 }, (_, s) => String(s).padStart(2, "0"));

function formatOffset(hours: number): string {
  const sign = hours < 0 ? "-" : "+";
  return `${sign}${String(Math.abs(hours)).padStart(2, "0")}:00`;
}

// ---------------------------------------------------------------------------
// Plans

interface DatasetPlan {
  readonly index: number;
  readonly template: DatasetTemplate;
  readonly name: string;
  readonly folder: string;
  readonly random: Random;
  readonly startYear: number;
  readonly endYear: number;
  /** Day indexes that may be sampled, ascending. */
  readonly allowed: Int32Array;
  /** For year y, allowed indexes of that year start at `yearStarts[y - startYear]`. */
  readonly yearStarts: Int32Array;
  readonly standardZone: string;
  readonly daylightZone: string;
  readonly locations: LocationPlan[];
}

type DepthMode = "none" | "fixed" | "surface" | "profile";

interface LocationPlan {
  readonly index: number;
  id: string;
  readonly name: string;
  readonly province: RegionId;
  readonly type: string;
  readonly media: string;
  readonly latitude: string;
  readonly longitude: string;
  readonly crs: string;
  readonly accuracy: readonly [string, string] | null;
  readonly vertical: readonly [string, string] | null;
  /** Characteristic indexes: the field ones first, then the lab ones. */
  readonly suite: Int16Array;
  readonly fieldCount: number;
  /** Lab samples are taken on every `labEvery`-th visit; field readings on all. */
  readonly labEvery: number;
  readonly siteZ: Float64Array;
  readonly continuous: boolean;
  readonly fieldActivity: string;
  readonly labActivity: string;
  readonly composite: boolean;
  readonly depthMode: DepthMode;
  /** The depth and unit of every visit when `depthMode` is `"fixed"`. */
  readonly fixedDepth: readonly [string, string];
  readonly seasonScale: number;
  readonly startYear: number;
  readonly endYear: number;
  readonly weight: number;
  readonly seed: number;
  rows: number;
}

function allocate(total: number, weights: readonly number[]): number[] {
  let sum = 0;
  for (const w of weights) sum += w;
  const out: number[] = [];
  let cumulative = 0;
  let given = 0;
  for (const w of weights) {
    cumulative += w;
    const upTo = Math.round((total * cumulative) / sum);
    out.push(upTo - given);
    given = upTo;
  }
  return out;
}

function planDataset(
  index: number,
  locationCount: number,
  seed: number,
  calendar: Calendar,
  usedDois: Set<string>,
): DatasetPlan & { readonly doi: string; readonly uuid: string } {
  const template = TEMPLATES[index % TEMPLATES.length];
  if (template === undefined) throw new RangeError("Cannot find a dataset template");
  const round = Math.floor(index / TEMPLATES.length);
  const name = round === 0 ? template.name : `${template.name} (Phase ${round + 1})`;
  const folder = round === 0 ? template.slug : `${template.slug}-phase-${round + 1}`;
  const datasetSeed = mixSeed(seed, index + 1);
  const random = createRandom(datasetSeed);

  const startYear = Math.min(calendar.firstYear + template.yearStartOffset, calendar.lastYear);
  const endYear = Math.max(startYear, calendar.lastYear - template.yearEndOffset);
  const full = new Set(template.months);
  const sparse = new Set(template.sparseMonths);
  const allowed: number[] = [];
  const yearStarts: number[] = [];
  for (let day = 0; day < calendar.dates.length; day++) {
    const year = calendar.years[day] ?? 0;
    if (year < startYear || year > endYear) continue;
    while (yearStarts.length <= year - startYear) yearStarts.push(allowed.length);
    const month = calendar.months[day] ?? 0;
    if (full.has(month) || (sparse.has(month) && day % template.sparseStride === 0)) {
      allowed.push(day);
    }
  }
  yearStarts.push(allowed.length);

  const standardZone = template.utcOffset === null ? "Z" : formatOffset(template.utcOffset);
  const daylightZone = template.utcOffset === null
    ? "Z"
    : formatOffset(template.utcOffset + (template.dst ? 1 : 0));

  const id = uuid(random);
  let code = doi(random);
  while (usedDois.has(code)) code = doi(random);
  usedDois.add(code);

  const prefix = round === 0 ? template.idPrefix : `${template.idPrefix}${round + 1}`;
  const usedNames = new Set<string>();
  const locations: LocationPlan[] = [];
  for (let i = 0; i < locationCount; i++) {
    locations.push(planLocation(template, prefix, i, datasetSeed, startYear, endYear, usedNames));
  }
  return {
    index,
    template,
    name,
    folder,
    random,
    startYear,
    endYear,
    allowed: Int32Array.from(allowed),
    yearStarts: Int32Array.from(yearStarts),
    standardZone,
    daylightZone,
    locations,
    doi: code,
    uuid: id,
  };
}

function planLocation(
  template: DatasetTemplate,
  prefix: string,
  index: number,
  datasetSeed: number,
  startYear: number,
  endYear: number,
  usedNames: Set<string>,
): LocationPlan {
  const locationSeed = mixSeed(datasetSeed, index + 0x10000);
  const random = createRandom(locationSeed);
  const type = pickWeighted(random, template.types);
  const groundwater = WELL_TYPES.has(type);
  const box = template.boxes[index % template.boxes.length];
  if (box === undefined) throw new RangeError("Cannot find a location box");
  const decimals = random() < 0.7 ? 5 : 4;
  const latitude = formatNumber(box.lat[0] + random() * (box.lat[1] - box.lat[0]), decimals);
  const longitude = formatNumber(box.lon[0] + random() * (box.lon[1] - box.lon[0]), decimals);

  let name: string;
  if (groundwater) {
    const label = type === "Well" ? "Monitoring Well MW" : "Piezometer P";
    name = `${label}-${String(index + 1).padStart(2, "0")}, ${pick(random, template.waters)}`;
  } else {
    name = random() < 0.4
      ? pick(random, template.waters)
      : `${pick(random, template.waters)} ${pick(random, NAME_SUFFIXES)}`;
    if (usedNames.has(name)) name = `${name} ${index + 1}`;
  }
  usedNames.add(name);

  const crs = random() < 0.04 ? "NAD27" : pickWeighted(random, template.crs);
  const accuracyDraw = random();
  const accuracy: readonly [string, string] | null = accuracyDraw < 0.5
    ? [pick(random, ["1", "3", "5", "10", "30"]), "m"]
    : accuracyDraw < 0.6
    ? [pick(random, ["0.1", "0.5"]), "km"]
    : null;
  const verticalDraw = random();
  const elevation = 150 + random() * 900;
  const vertical: readonly [string, string] | null = verticalDraw < 0.15
    ? [formatNumber(elevation, 1), "m"]
    : verticalDraw < 0.25
    ? [formatNumber(elevation, 0), "MASL"]
    : verticalDraw < 0.3
    ? [formatNumber(elevation * 3.28084, 0), "ft"]
    : null;

  const continuous = !groundwater && random() < template.continuousRate;
  const suite: number[] = [];
  if (continuous) {
    suite.push(WATER_TEMPERATURE);
    if (random() < 0.4) suite.push(DISSOLVED_OXYGEN);
  } else {
    for (const c of groundwater ? GROUNDWATER_FIELD : FIELD_CORE) suite.push(c);
    for (const extra of template.fieldExtras) {
      const c = indexOfCharacteristic(extra);
      if (!suite.includes(c) && random() < template.fieldExtraRate) {
        const spec = CHARACTERISTICS[c];
        if (spec !== undefined && (!groundwater || spec.groundwater)) suite.push(c);
      }
    }
    // At most two lab packages per location, starting at a random one so
    // that every package of the template appears somewhere.
    const offset = Math.floor(random() * template.lab.length);
    let packages = 0;
    for (let g = 0; g < template.lab.length && packages < 2; g++) {
      const entry = template.lab[(offset + g) % template.lab.length];
      if (entry === undefined || random() >= entry[1]) continue;
      packages++;
      for (const c of groupIndexes(entry[0])) {
        const spec = CHARACTERISTICS[c];
        if (spec === undefined || (groundwater && !spec.groundwater)) continue;
        // Not every lab package has every analyte.
        if (random() < 0.65) suite.push(c);
      }
    }
  }
  let fieldCount = suite.length;
  while (fieldCount > 0 && CHARACTERISTICS[suite[fieldCount - 1] ?? 0]?.group !== "field") {
    fieldCount--;
  }
  const labEvery = fieldCount === suite.length ? 1 : 2 + Math.floor(random() * 4);
  const siteZ = new Float64Array(suite.length);
  for (let i = 0; i < suite.length; i++) siteZ[i] = gauss(random);

  let first = startYear;
  let last = endYear;
  if (continuous) {
    first = startYear + Math.floor(random() * (endYear - startYear + 1));
    last = Math.min(endYear, first + Math.floor(random() * 3));
  } else if (random() < 0.3) {
    const spanYears = endYear - startYear + 1;
    first = startYear + Math.floor(random() * Math.ceil(spanYears / 2));
    last = Math.max(first, endYear - Math.floor(random() * Math.ceil(spanYears / 3)));
  }

  // Schema 3.0 wants depths below the surface as negative numbers.
  let depthMode: DepthMode = "none";
  let fixedDepth: readonly [string, string] = ["-0.25", "m"];
  if (groundwater) {
    depthMode = "fixed";
    fixedDepth = [formatNumber(-(4 + random() * 36), 1), "m"];
  } else if (continuous) {
    depthMode = "fixed";
    fixedDepth = pick(random, [["-0.5", "m"], ["-1", "m"], ["-30", "cm"]] as const);
  } else if (DEEP_TYPES.has(type)) {
    depthMode = random() < 0.5 ? "profile" : "surface";
  } else if (random() < 0.25) {
    depthMode = "fixed";
    fixedDepth = random() < 0.5 ? ["-15", "cm"] : ["-0.25", "m"];
  }

  const fieldActivity = continuous
    ? "Field Msr/Obs-Continuous Time Series"
    : random() < 0.1
    ? "Field Msr/Obs-Portable Data Logger"
    : "Field Msr/Obs";
  const labDraw = random();
  const labActivity = labDraw < 0.08
    ? "Sample-Composite Without Parents"
    : labDraw < 0.14 && DEEP_TYPES.has(type)
    ? "Sample-Integrated Vertical Profile"
    : "Sample-Routine";

  return {
    index,
    id: `${prefix}-${String(index + 1).padStart(3, "0")}`,
    name,
    province: box.province,
    type,
    media: groundwater ? "Groundwater" : "Surface Water",
    latitude,
    longitude,
    crs,
    accuracy,
    vertical,
    suite: Int16Array.from(suite),
    fieldCount,
    labEvery,
    siteZ,
    continuous,
    fieldActivity,
    labActivity,
    composite: labActivity === "Sample-Composite Without Parents",
    depthMode,
    fixedDepth,
    seasonScale: groundwater ? 0.1 : 1,
    startYear: first,
    endYear: last,
    weight: (0.5 + random()) * (continuous ? 8 : 1) *
      Math.sqrt((fieldCount + (suite.length - fieldCount) / labEvery) / 8),
    seed: mixSeed(locationSeed, 0x5eed),
    rows: 0,
  };
}

// ---------------------------------------------------------------------------
// Rows

interface Writer {
  readonly stream: ReturnType<typeof createWriteStream>;
  buffer: string;
  bytes: number;
}

async function flush(writer: Writer): Promise<void> {
  if (writer.buffer.length === 0) return;
  const chunk = writer.buffer;
  writer.buffer = "";
  writer.bytes += Buffer.byteLength(chunk);
  if (!writer.stream.write(chunk)) await once(writer.stream, "drain");
}

/** Walks one location's visits; each visit writes one row per characteristic. */
interface Cursor {
  readonly dataset: DatasetPlan;
  readonly location: LocationPlan;
  readonly random: Random;
  readonly prefix: string;
  readonly from: number;
  readonly span: number;
  readonly visits: number;
  visit: number;
  remaining: number;
  day: number;
  minute: number;
  /** Sort key of the current visit: day * 1440 + minute. */
  key: number;
  labSequence: number;
}

function createCursor(dataset: DatasetPlan, location: LocationPlan): Cursor {
  const from = dataset.yearStarts[location.startYear - dataset.startYear] ?? 0;
  const to = dataset.yearStarts[location.endYear - dataset.startYear + 1] ?? 0;
  const locationValues = [
    dataset.name,
    location.id,
    location.name,
    location.latitude,
    location.longitude,
    location.crs,
    location.accuracy?.[0] ?? null,
    location.accuracy?.[1] ?? null,
    location.vertical?.[0] ?? null,
    location.vertical?.[1] ?? null,
    location.type,
  ];
  const cursor: Cursor = {
    dataset,
    location,
    random: createRandom(location.seed),
    prefix: formatCsvRow(locationValues).slice(0, -2) + ",",
    from,
    span: Math.max(1, to - from),
    visits: visitCount(location),
    visit: 0,
    remaining: location.rows,
    day: 0,
    minute: 0,
    key: 0,
    labSequence: 0,
  };
  prepareVisit(cursor);
  return cursor;
}

function rowsPerVisit(location: LocationPlan, visit: number): number {
  return visit % location.labEvery === 0 ? location.suite.length : location.fieldCount;
}

/** Number of visits needed to write `location.rows` rows, the last one possibly partial. */
function visitCount(location: LocationPlan): number {
  let cycleRows = 0;
  for (let v = 0; v < location.labEvery; v++) cycleRows += rowsPerVisit(location, v);
  const cycles = Math.floor(location.rows / cycleRows);
  let left = location.rows - cycles * cycleRows;
  let visits = cycles * location.labEvery;
  for (let v = 0; left > 0; v++) {
    left -= rowsPerVisit(location, v);
    visits++;
  }
  return visits;
}

function prepareVisit(cursor: Cursor): void {
  // Visit j lands at ((j + u) / visits) along the allowed days, so visits are
  // strictly ordered in time and follow the dataset's sampling season.
  const t = ((cursor.visit + cursor.random()) * cursor.span) / cursor.visits;
  const k = Math.min(cursor.span - 1, Math.floor(t));
  const day = cursor.dataset.allowed[cursor.from + k] ?? 0;
  const template = cursor.dataset.template;
  let start = 7 * 60;
  let length = 11 * 60;
  if (cursor.location.continuous) {
    start = 0;
    length = 1440;
  } else if (template.utcOffset === null) {
    start = 15 * 60; // Field work from about 09:00 local time, written in UTC.
    length = 9 * 60;
  }
  cursor.day = day;
  cursor.minute = start + Math.floor((t - k) * length);
  cursor.key = day * 1440 + cursor.minute;
}

function depthFor(cursor: Cursor): readonly [string | null, string | null] {
  const random = cursor.random;
  switch (cursor.location.depthMode) {
    case "none":
      return [null, null];
    case "fixed":
      return cursor.location.fixedDepth;
    case "surface":
      return random() < 0.8 ? ["-0.5", "m"] : [null, null];
    case "profile":
      return random() < 0.85
        ? [pick(random, ["-0.5", "-1", "-2", "-5", "-10", "-20"]), "m"]
        : [pick(random, ["-3", "-10", "-30"]), "ft"];
    default: {
      const never: never = cursor.location.depthMode;
      throw new TypeError(`Unknown depth mode: ${String(never)}`);
    }
  }
}

const tail: (string | null)[] = new Array<string | null>(TAIL_COLUMNS).fill(null);

/** Appends the rows of the cursor's current visit to `writer.buffer`; returns the row count. */
function writeVisit(cursor: Cursor, writer: Writer, seen: Uint8Array, calendar: Calendar): number {
  const { dataset, location, random } = cursor;
  const template = dataset.template;
  const suite = location.suite;
  const rows = Math.min(cursor.remaining, rowsPerVisit(location, cursor.visit));
  cursor.remaining -= rows;

  const day = cursor.day;
  const date = calendar.dates[day] ?? "";
  const season = (calendar.season[day] ?? 0) * location.seasonScale;
  let time: string | null = null;
  let zone: string | null = null;
  if (location.continuous || random() < template.timeRate) {
    const hhmm = TIMES[cursor.minute] ?? "12:00";
    time = template.seconds
      ? `${hhmm}:${location.continuous ? "00" : (SECONDS[Math.floor(random() * 60)] ?? "00")}`
      : hhmm;
    if (location.continuous || random() < template.timeZoneRate) {
      zone = calendar.daylight[day] === 1 ? dataset.daylightZone : dataset.standardZone;
    }
  }
  const qcDraw = random();
  const qc = !location.continuous && qcDraw < 0.04;
  const labActivity = qc ? pick(random, LAB_QC_TYPES) : location.labActivity;
  const fieldActivity = qc ? "Quality Control Field Replicate Msr/Obs" : location.fieldActivity;
  const blank = qc && BLANK_TYPES.has(labActivity);
  const [depth, depthUnit] = depthFor(cursor);
  const fieldEquipment = random() < 0.15 ? "Probe/Sensor" : null;

  const year = calendar.years[day] ?? 0;
  cursor.labSequence++;
  const labSampleBase = `${template.labPrefix}${String(year % 100).padStart(2, "0")}-` +
    `${String(location.index + 1).padStart(3, "0")}${String(cursor.labSequence).padStart(3, "0")}`;
  const lag = 1 + Math.floor(random() * 6);
  const analysisDate = calendar.dates[day + lag] ?? date;
  const analysisTime = random() < 0.6 ? (TIMES[540 + Math.floor(random() * 480)] ?? null) : null;
  const analysisZone = analysisTime !== null && dataset.standardZone !== "Z" && random() < 0.7
    ? (calendar.daylight[day + lag] === 1 ? dataset.daylightZone : dataset.standardZone)
    : null;
  const labDetail = random() < 0.9;
  const methodName = random() < 0.6;
  const status = random() < 0.08 ? null : template.status;

  for (let i = 0; i < rows; i++) {
    const c = suite[i] ?? 0;
    const runtime = RUNTIME[c];
    if (runtime === undefined) continue;
    const spec = runtime.spec;
    seen[c] = 1;
    const lab = spec.group !== "field";

    let p = spec.center + 0.15 * (location.siteZ[i] ?? 0) + 0.4 * spec.season * season +
      0.1 * gauss(random);
    if (blank && lab) p = -1;
    if (p < 0) p = 0;
    else if (p > 1) p = 1;
    const raw = spec.log ? Math.exp(runtime.base + p * runtime.span) : runtime.base + p *
        runtime.span;
    const below = spec.detectionLimit !== null && (blank || raw < spec.detectionLimit);

    tail[0] = lab ? labActivity : fieldActivity;
    tail[1] = location.media;
    tail[2] = date;
    tail[3] = time;
    tail[4] = zone;
    if (lab && location.composite && time !== null) {
      tail[5] = calendar.dates[day + 1] ?? date;
      tail[6] = time;
      tail[7] = zone;
    } else {
      tail[5] = null;
      tail[6] = null;
      tail[7] = null;
    }
    tail[8] = spec.depth ? null : depth;
    tail[9] = spec.depth ? null : depthUnit;
    tail[10] = lab ? template.bottle : spec.depth ? "Secchi Disk" : fieldEquipment;
    tail[11] = spec.name;
    tail[12] = spec.speciation;
    tail[13] = spec.fraction;
    if (below) {
      tail[14] = null;
      tail[15] = null;
      tail[16] = "Actual";
      tail[17] = template.notDetected;
      tail[18] = runtime.dlText;
      tail[19] = spec.unit;
      tail[20] = template.limitType;
    } else {
      tail[14] = formatNumber(raw, spec.decimals);
      tail[15] = spec.unit;
      tail[16] = spec.calculated ? "Calculated" : random() < 0.01 ? "Estimated" : "Actual";
      tail[17] = null;
      const reportLimit = runtime.dlText !== null && random() < 0.3;
      tail[18] = reportLimit ? runtime.dlText : null;
      tail[19] = reportLimit ? spec.unit : null;
      tail[20] = reportLimit ? template.limitType : null;
    }
    tail[21] = status;
    tail[22] = random() < 0.012 ? pick(random, lab ? LAB_COMMENTS : FIELD_COMMENTS) : null;
    if (lab) {
      const method = labDetail ? spec.method : null;
      tail[23] = method?.id ?? null;
      tail[24] = method?.context ?? null;
      tail[25] = methodName ? (method?.name ?? null) : null;
      tail[26] = labDetail ? analysisDate : null;
      tail[27] = labDetail ? analysisTime : null;
      tail[28] = labDetail ? analysisZone : null;
      tail[29] = template.laboratory;
      tail[30] = labDetail ? labSampleBase : null;
    } else {
      tail[23] = null;
      tail[24] = null;
      tail[25] = null;
      tail[26] = null;
      tail[27] = null;
      tail[28] = null;
      tail[29] = null;
      tail[30] = null;
    }
    writer.buffer += cursor.prefix + formatCsvRow(tail);
  }
  cursor.visit++;
  if (cursor.visit < cursor.visits) prepareVisit(cursor);
  return rows;
}

function heapPush(heap: Cursor[], cursor: Cursor): void {
  heap.push(cursor);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    const p = heap[parent];
    if (p === undefined || !before(cursor, p)) break;
    heap[i] = p;
    i = parent;
  }
  heap[i] = cursor;
}

function heapPop(heap: Cursor[]): Cursor | undefined {
  const top = heap[0];
  const last = heap.pop();
  if (top === undefined || last === undefined || heap.length === 0) return top;
  let i = 0;
  for (;;) {
    const left = 2 * i + 1;
    if (left >= heap.length) break;
    const right = left + 1;
    const l = heap[left];
    const r = heap[right];
    if (l === undefined) break;
    const child = r !== undefined && before(r, l) ? right : left;
    const c = child === right ? r : l;
    if (c === undefined || !before(c, last)) break;
    heap[i] = c;
    i = child;
  }
  heap[i] = last;
  return top;
}

function before(a: Cursor, b: Cursor): boolean {
  return a.key < b.key || (a.key === b.key && a.location.index < b.location.index);
}

async function writeRows(
  dataset: DatasetPlan,
  file: string,
  seen: Uint8Array,
  calendar: Calendar,
  flushed: (rows: number, bytes: number) => void,
): Promise<{ rows: number; bytes: number }> {
  const writer: Writer = {
    stream: createWriteStream(file, { highWaterMark: CHUNK_CHARS }),
    buffer: formatCsvRow(HEADER),
    bytes: 0,
  };
  let rows = 0;
  if (dataset.template.interleave) {
    const heap: Cursor[] = [];
    for (const location of dataset.locations) heapPush(heap, createCursor(dataset, location));
    for (let cursor = heapPop(heap); cursor !== undefined; cursor = heapPop(heap)) {
      rows += writeVisit(cursor, writer, seen, calendar);
      if (cursor.visit < cursor.visits) heapPush(heap, cursor);
      if (writer.buffer.length >= CHUNK_CHARS) {
        await flush(writer);
        flushed(rows, writer.bytes);
      }
    }
  } else {
    for (const location of dataset.locations) {
      const cursor = createCursor(dataset, location);
      while (cursor.visit < cursor.visits) {
        rows += writeVisit(cursor, writer, seen, calendar);
        if (writer.buffer.length >= CHUNK_CHARS) {
          await flush(writer);
          flushed(rows, writer.bytes);
        }
      }
    }
  }
  await flush(writer);
  writer.stream.end();
  await finished(writer.stream);
  return { rows, bytes: writer.bytes };
}

// ---------------------------------------------------------------------------
// Metadata

function metadataOf(
  dataset: DatasetPlan & { readonly doi: string; readonly uuid: string },
  calendar: Calendar,
): Record<string, unknown> {
  const template = dataset.template;
  const random = dataset.random;
  // Datasets are created about five weeks apart, so their order is clear.
  const created = Date.UTC(calendar.lastYear - 4, 1, 3) + dataset.index * 37 * DAY_MS +
    Math.floor(random() * 20 * 3600) * 1000;
  const published = created + (1 + Math.floor(random() * 9)) * DAY_MS +
    Math.floor(random() * 3600) * 1000;
  const publishedYear = new Date(published).getUTCFullYear();
  const provinces = [...new Set(dataset.locations.map((l) => l.province))];
  const shared: string[] = [template.hub, "admin.2.ca"];
  const metadata: Record<string, unknown> = {
    Id: dataset.uuid,
    DOI: dataset.doi,
    Version: template.version,
    DatasetName: dataset.name,
    DataStewardEmail: template.email,
    DataCollectionOrganization: template.organization,
    DataUploadOrganization: template.uploadOrganization,
    ProgressCode: template.progress,
    MaintenanceFrequencyCode: template.maintenance,
    Abstract: template.abstract,
    DataCollectionInformation: template.collection,
    DataProcessing: template.processing,
    FundingSources: template.funding,
    DataSourceURL: template.url,
    OtherDataSources: template.otherSources,
    Citation: `${template.uploadOrganization}. ${publishedYear}. "${dataset.name}" (dataset). ` +
      `${template.version}. DataStream. https://doi.org/${dataset.doi}.`,
    Licence: template.licence,
    Disclaimer: DISCLAIMER,
    TopicCategoryCode: [...template.topics],
    Keywords: [...template.keywords],
    CreateTimestamp: new Date(created).toISOString(),
    PublishedTimestamp: new Date(published).toISOString(),
    RegionIds: provinces.length === 1 ? [...shared, ...provinces] : shared,
  };
  if (provinces.length > 1) {
    const byLocation: Record<string, string[]> = {};
    for (const location of dataset.locations) {
      byLocation[location.id] = [...shared, location.province];
    }
    metadata["LocationRegionIds"] = byLocation;
  }
  return metadata;
}

// ---------------------------------------------------------------------------
// Entry point

function checkInteger(name: string, value: number, min: number, max: number): void {
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new TypeError(`Cannot generate datasets: ${name} must be an integer, got ${value}`);
  }
  if (value < min || value > max) {
    throw new RangeError(
      `Cannot generate datasets: ${name} must be in ${min}..${max}, got ${value}`,
    );
  }
}

/**
 * Writes seeded, deterministic DataStream demo datasets: `<out>/<folder>/metadata.json`
 * and `<out>/<folder>/data.csv` per dataset. Only those folders are deleted and
 * rewritten. Rows are streamed, so memory stays bounded at any size.
 * @param options where to write, the seed and the sizes
 * @returns counts of what was written
 * @throws {TypeError} when a size is not an integer
 * @throws {RangeError} when a size is out of range (fewer locations than datasets,
 * or fewer observations than locations)
 * @example
 * ```ts
 * const summary = await generateDatasets({ out: "/tmp/demo", observations: 10_000 });
 * console.log(summary.observations); // 10000
 * ```
 */
export async function generateDatasets(options: GenerateOptions): Promise<GenerateSummary> {
  const seed = options.seed ?? DEFAULTS.seed;
  const datasetCount = options.datasets ?? DEFAULTS.datasets;
  const locationCount = options.locations ?? DEFAULTS.locations;
  const observationCount = options.observations ?? DEFAULTS.observations;
  const firstYear = options.firstYear ?? DEFAULTS.firstYear;
  const years = options.years ?? DEFAULTS.years;
  checkInteger("seed", seed, 0, 0xffffffff);
  checkInteger("datasets", datasetCount, 1, 10_000);
  checkInteger("locations", locationCount, datasetCount, 10_000_000);
  checkInteger("observations", observationCount, locationCount, 2_000_000_000);
  checkInteger("firstYear", firstYear, 1900, 2100);
  checkInteger("years", years, 1, 100);

  const calendar = createCalendar(firstYear, firstYear + years - 1);
  const weights = Array.from(
    { length: datasetCount },
    (_, d) => TEMPLATES[d % TEMPLATES.length]?.locationWeight ?? 1,
  );
  const perDataset = allocate(locationCount - datasetCount, weights).map((n) => n + 1);
  const usedDois = new Set<string>();
  const datasets = perDataset.map((n, d) => planDataset(d, n, seed, calendar, usedDois));

  // One MonitoringLocationID string appears in two datasets, as happens in real data.
  const firstOther = datasets[1]?.locations[0];
  const firstOwn = datasets[0]?.locations[0];
  if (firstOther !== undefined && firstOwn !== undefined) firstOther.id = firstOwn.id;

  // Every location gets one row, then the rest is shared by weight.
  const all: LocationPlan[] = [];
  const locationWeights: number[] = [];
  for (const dataset of datasets) {
    for (const location of dataset.locations) {
      all.push(location);
      locationWeights.push(location.weight * dataset.template.intensity);
    }
  }
  const extra = allocate(observationCount - all.length, locationWeights);
  all.forEach((location, i) => {
    location.rows = 1 + (extra[i] ?? 0);
  });

  const seen = new Uint8Array(CHARACTERISTICS.length);
  let bytes = 0;
  let rows = 0;
  const folders = new Set<string>();
  for (const dataset of datasets) {
    if (folders.has(dataset.folder)) {
      throw new RangeError(`Cannot generate datasets: duplicate folder ${dataset.folder}`);
    }
    folders.add(dataset.folder);
    const dir = path.join(options.out, dataset.folder);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    const json = JSON.stringify(metadataOf(dataset, calendar), null, 2) + "\n";
    await writeFile(path.join(dir, "metadata.json"), json);
    bytes += Buffer.byteLength(json);
    const before = { rows, bytes };
    const written = await writeRows(
      dataset,
      path.join(dir, "data.csv"),
      seen,
      calendar,
      (fileRows, fileBytes) =>
        options.onProgress?.({
          rows: before.rows + fileRows,
          totalRows: observationCount,
          bytes: before.bytes + fileBytes,
        }),
    );
    rows += written.rows;
    bytes += written.bytes;
  }
  let characteristicNames = 0;
  for (const flag of seen) characteristicNames += flag;
  return {
    datasets: datasets.length,
    locations: all.length,
    observations: rows,
    characteristicNames,
    bytes,
  };
}

function parseInteger(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text.replaceAll("_", ""));
  if (!Number.isInteger(value)) {
    throw new TypeError(`Cannot parse --${name}: expected an integer but found "${text}"`);
  }
  return value;
}

async function main(argv: readonly string[]): Promise<void> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      out: { type: "string" },
      seed: { type: "string" },
      datasets: { type: "string" },
      locations: { type: "string" },
      observations: { type: "string" },
      "first-year": { type: "string" },
      years: { type: "string" },
    },
    strict: true,
  });
  const seed = parseInteger("seed", values.seed);
  const datasets = parseInteger("datasets", values.datasets);
  const locations = parseInteger("locations", values.locations);
  const observations = parseInteger("observations", values.observations);
  const firstYear = parseInteger("first-year", values["first-year"]);
  const years = parseInteger("years", values.years);
  const options: GenerateOptions = {
    out: values.out ?? fileURLToPath(new URL("./datasets/", import.meta.url)),
    ...(seed === undefined ? {} : { seed }),
    ...(datasets === undefined ? {} : { datasets }),
    ...(locations === undefined ? {} : { locations }),
    ...(observations === undefined ? {} : { observations }),
    ...(firstYear === undefined ? {} : { firstYear }),
    ...(years === undefined ? {} : { years }),
  };
  const started = performance.now();
  const progress = new Progress({
    label: `Writing ${options.out}`,
    now: () => performance.now(),
    unit: "rows",
    log: consoleLog(),
    terminal: process.stderr.isTTY ? process.stderr : undefined,
  });
  const summary = await generateDatasets({
    ...options,
    onProgress: (state) => void progress.update({ done: state.rows, total: state.totalRows }),
  });
  progress.finish({ done: summary.observations });
  const seconds = (performance.now() - started) / 1000;
  console.log(`Wrote ${options.out} in ${seconds.toFixed(1)} s`);
  console.log(JSON.stringify(summary, null, 2));
}

const entry = process.argv[1];
if (entry !== undefined && import.meta.url === pathToFileURL(entry).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}

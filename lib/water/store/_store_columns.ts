import type { CodeArray, Column } from "../../columnar/mod.ts";
import type { Scalar } from "../../odata/mod.ts";
import {
  LIST_METADATA_COLUMNS,
  LOCATION_COLUMNS,
  METADATA_COLUMNS,
  NUMERIC_LOCATION_COLUMNS,
  OBSERVATION_COLUMNS,
} from "../fields.ts";
import { activityGroupTypeOf } from "../vocabulary.ts";
import { codeArray, countCodes } from "./_code_column.ts";
import { buildPostingIndex } from "./_posting_index.ts";
import type { StoreDictionary } from "./_store_dictionary.ts";
import type { BuiltColumn, BuiltLocation, DatasetIds } from "./built_dataset.ts";
import { normalizeCoordinates } from "./normalize_coordinates.ts";

/** A dataset as the store records it: its id and metadata, for the dataset columns. */
interface DatasetValues {
  readonly id: string;
  readonly metadata: Readonly<Record<string, string | readonly string[] | null>>;
}

/** What a finished store's columns are made of: the builder's datasets, locations, rows and dictionaries. */
export interface StoreColumnsInput {
  /**
   * Each dataset's observation columns, in `OBSERVATION_COLUMNS` order, their
   * text codes codes of `dictionaries`: each is let go of (set to undefined)
   * once copied, so that the store's columns and the datasets' are not all
   * held at once.
   */
  readonly observations: (BuiltColumn | undefined)[][];
  /** The store's dictionary of each observation column; undefined for numbers. */
  readonly dictionaries: readonly (StoreDictionary | undefined)[];
  /** Observations in all. */
  readonly rows: number;
  readonly locations: readonly BuiltLocation[];
  readonly datasets: readonly DatasetValues[];
  /** The first location of each dataset, and the location count last. */
  readonly datasetLocationStarts: readonly number[];
  /** The first row of each location, and the row count last. */
  readonly locationRowStarts: Uint32Array;
  /** Where each dataset's ids start. */
  readonly ids: readonly DatasetIds[];
}

/**
 * The columns of a finished store: the observation columns merged from the
 * datasets' (with the derived `ActivityGroupType` and `ActivityStartYear`,
 * and posting indexes), the location columns (with normalized coordinates
 * and region ids), the dataset columns and the `Id` columns.
 * @param input the builder's datasets, locations, rows and dictionaries
 * @returns the columns by key (`observation.ResultValue`, `location.Id`, ...)
 */
export function storeColumns(input: StoreColumnsInput): Map<string, Column> {
  const columns = new Map<string, Column>();
  addObservationColumns(columns, input.observations, input.dictionaries, input.rows);
  addLocationColumns(columns, input.locations);
  addDatasetColumns(columns, input.datasets);
  addIdColumns(columns, input);
  return columns;
}

/**
 * The observation columns: each dataset's numbers, or codes of the store's
 * dictionary, one after another (widened where the dictionary outgrew a
 * dataset's code width), with the rows per code summed. Each dataset's
 * columns are let go of once copied.
 * @param columns where they go
 * @param parts each dataset's columns
 * @param dictionaries the store's dictionary of each text column
 * @param rows observations in all
 */
function addObservationColumns(
  columns: Map<string, Column>,
  parts: (BuiltColumn | undefined)[][],
  dictionaries: readonly (StoreDictionary | undefined)[],
  rows: number,
): void {
  let activityType:
    | { codes: CodeArray; values: readonly Scalar[]; counts: Uint32Array }
    | undefined;
  let startDate: { codes: CodeArray; values: readonly Scalar[]; counts: Uint32Array } | undefined;
  OBSERVATION_COLUMNS.forEach((name, s) => {
    const key = `observation.${name}`;
    const dictionary = dictionaries[s];
    const values = dictionary?.values ?? [];
    const counts = new Uint32Array(values.length);
    const numbers = dictionary === undefined ? new Float64Array(rows) : undefined;
    const codes = dictionary === undefined ? undefined : codeArray(values.length - 1, rows);
    let at = 0;
    for (const part of parts) {
      const column = part[s]!;
      part[s] = undefined;
      if (column.kind === "number") {
        numbers!.set(column.values, at);
        at += column.values.length;
        continue;
      }
      codes!.set(column.codes, at);
      at += column.codes.length;
      const codeOf = column.base!.codeOf;
      for (let l = 0; l < codeOf.length; l++) counts[codeOf[l]!]! += column.counts[l]!;
    }
    if (at !== rows) {
      throw new TypeError(`Cannot finish the store: ${name} has ${at} rows, not ${rows}`);
    }
    if (numbers !== undefined) {
      columns.set(key, { kind: "number", values: numbers });
      return;
    }
    const indexed = name === "CharacteristicName" || name === "ActivityMediaName";
    columns.set(key, {
      kind: "dict",
      codes: codes!,
      values,
      counts,
      ...(indexed ? { index: buildPostingIndex(codes!, counts, values.length, undefined) } : {}),
    });
    if (name === "ActivityType") activityType = { codes: codes!, values, counts };
    if (name === "ActivityStartDate") startDate = { codes: codes!, values, counts };
  });
  if (activityType !== undefined) {
    const groups = activityType.values.map((
      value,
    ) => (value === null ? null : activityGroupTypeOf(String(value))));
    columns.set(
      "observation.ActivityGroupType",
      derivedColumn(activityType.codes, groups, activityType.counts),
    );
  }
  if (startDate !== undefined) {
    const years = startDate.values.map((
      value,
    ) => (value === null ? null : Number(String(value).slice(0, 4))));
    columns.set(
      "observation.ActivityStartYear",
      derivedColumn(startDate.codes, years, startDate.counts),
    );
  }
}

/** The location columns, with normalized coordinates and region ids. */
function addLocationColumns(
  columns: Map<string, Column>,
  locations: readonly BuiltLocation[],
): void {
  LOCATION_COLUMNS.forEach((name, i) => {
    const values = locations.map((location) => location.values[i] ?? null);
    columns.set(
      `location.${name}`,
      NUMERIC_LOCATION_COLUMNS.has(name) ? numberColumn(values) : dictColumn(values),
    );
  });
  const normalized = locations.map((location) =>
    normalizeCoordinates(
      (location.values[2] as number | null) ?? Number.NaN,
      (location.values[3] as number | null) ?? Number.NaN,
      location.values[4] as string | null,
    )
  );
  columns.set("location.LatitudeNormalized", numberColumn(normalized.map((c) => c.latitude)));
  columns.set("location.LongitudeNormalized", numberColumn(normalized.map((c) => c.longitude)));
  columns.set(
    "location.HorizontalCoordinateReferenceSystemNormalized",
    dictColumn(locations.map(() => "WGS84")),
  );
  columns.set("location.RegionId", {
    kind: "values",
    values: locations.map((location) => location.regionIds),
  });
}

/** The dataset columns: ids, and metadata values (timestamps as milliseconds, lists as arrays). */
function addDatasetColumns(columns: Map<string, Column>, datasets: readonly DatasetValues[]): void {
  columns.set("dataset.Id", { kind: "values", values: datasets.map((d) => d.id) });
  for (const name of METADATA_COLUMNS) {
    const values = datasets.map((d) => {
      const value = d.metadata[name] ?? null;
      if (name.endsWith("Timestamp")) return typeof value === "string" ? Date.parse(value) : null;
      if (LIST_METADATA_COLUMNS.has(name)) return Array.isArray(value) ? value : [];
      return value;
    });
    columns.set(`dataset.${name}`, {
      kind: "values",
      values: values as (Scalar | readonly Scalar[])[],
    });
  }
}

/**
 * The `Id` columns: row numbers plus one while every dataset's ids follow
 * the previous one's, else row numbers plus an offset per dataset.
 */
function addIdColumns(columns: Map<string, Column>, input: StoreColumnsInput): void {
  const starts = input.datasetLocationStarts;
  const count = input.datasets.length;
  const locationStarts = new Uint32Array(count);
  const rowStarts = new Uint32Array(count);
  const locationOffsets = new Float64Array(count);
  const rowOffsets = new Float64Array(count);
  let contiguous = true;
  for (let d = 0; d < count; d++) {
    const ids = input.ids[d]!;
    locationStarts[d] = starts[d]!;
    rowStarts[d] = input.locationRowStarts[starts[d]!]!;
    locationOffsets[d] = ids.locationBase - locationStarts[d]! + 1;
    rowOffsets[d] = ids.rowBase - rowStarts[d]! + 1;
    if (locationOffsets[d] !== 1 || rowOffsets[d] !== 1) contiguous = false;
  }
  columns.set(
    "location.Id",
    contiguous ? { kind: "rownumber", offset: 1 } : {
      kind: "rownumber",
      offset: 1,
      segments: { starts: locationStarts, offsets: locationOffsets },
    },
  );
  columns.set(
    "observation.Id",
    contiguous
      ? { kind: "rownumber", offset: 1 }
      : { kind: "rownumber", offset: 1, segments: { starts: rowStarts, offsets: rowOffsets } },
  );
}

/** A dictionary column sharing another's codes, with values mapped, and postings by distinct value. */
function derivedColumn(codes: CodeArray, values: readonly Scalar[], counts: Uint32Array): Column {
  const keys = new Map<Scalar, number>();
  const keyOf = new Uint32Array(values.length);
  values.forEach((value, code) => {
    let key = keys.get(value);
    if (key === undefined) {
      key = keys.size;
      keys.set(value, key);
    }
    keyOf[code] = key;
  });
  return {
    kind: "dict",
    codes,
    values,
    counts,
    index: buildPostingIndex(codes, counts, keys.size, keyOf),
  };
}

/** A dictionary column from plain values (location-level columns). */
function dictColumn(values: readonly Scalar[]): Column {
  const dictionary: Scalar[] = [null];
  const codesOf = new Map<Scalar, number>([[null, 0]]);
  const size = new Set(values).size + 1;
  const codes: CodeArray = size <= 0x100
    ? new Uint8Array(values.length)
    : size <= 0x10000
    ? new Uint16Array(values.length)
    : new Uint32Array(values.length);
  values.forEach((value, i) => {
    let code = codesOf.get(value);
    if (code === undefined) {
      code = dictionary.length;
      dictionary.push(value);
      codesOf.set(value, code);
    }
    codes[i] = code;
  });
  return { kind: "dict", codes, values: dictionary, counts: countCodes(codes, dictionary.length) };
}

function numberColumn(values: readonly (Scalar | undefined)[]): Column {
  return {
    kind: "number",
    values: Float64Array.from(values, (v) => (typeof v === "number" ? v : Number.NaN)),
  };
}

import type { Column } from "../../columnar/mod.ts";
import type { Scalar } from "../../odata/mod.ts";
import {
  DERIVED_METADATA_COLUMNS,
  LOCATION_COLUMNS,
  NUMERIC_OBSERVATION_COLUMNS,
  OBSERVATION_COLUMNS,
} from "../fields.ts";
import { codeArray, countCodes } from "./_code_column.ts";
import {
  type BuiltColumn,
  type BuiltDataset,
  type BuiltLocation,
  temporalExtentOf,
} from "./built_dataset.ts";
import type { DatasetInput } from "./dataset_reader.ts";
import type { DatasetRecord, WaterStore } from "./store.ts";

/**
 * A dataset of a store as it is there, as a built dataset: its metadata (the
 * derived fields left out), its locations and its observations in the same
 * order, text with a dictionary of the values its rows have. Nothing is read
 * or checked again.
 * @param source the store that holds it
 * @param dataset its index there
 * @param record its record there (`source.datasets[dataset]`)
 * @returns the dataset's metadata and the dataset
 */
export function copyStoreDataset(
  source: WaterStore,
  dataset: number,
  record: DatasetRecord,
): { readonly input: DatasetInput; readonly built: BuiltDataset } {
  const metadata: Record<string, string | readonly string[] | null> = {};
  for (const [name, value] of Object.entries(record.metadata)) {
    if (!DERIVED_METADATA_COLUMNS.has(name)) metadata[name] = value;
  }
  const input: DatasetInput = {
    id: record.id,
    doi: record.doi,
    folder: record.folder,
    metadata,
    regionIds: [],
    locationRegionIds: new Map(),
  };
  const locationFrom = source.datasetLocationStarts[dataset]!;
  const locationTo = source.datasetLocationStarts[dataset + 1]!;
  const rowFrom = source.locationRowStarts[locationFrom]!;
  const rowTo = source.locationRowStarts[locationTo]!;
  const locationColumns = LOCATION_COLUMNS.map((name) => source.column(`location.${name}`));
  const regions = source.column("location.RegionId");
  const locations: BuiltLocation[] = [];
  const locationRows = new Uint32Array(locationTo - locationFrom);
  for (let l = locationFrom; l < locationTo; l++) {
    const values = locationColumns.map((
      column,
    ) => (column === undefined ? null : scalarAt(column, l)));
    locations.push({
      id: String(values[0]),
      values,
      regionIds: regions?.kind === "values" ? (regions.values[l] as readonly string[]) : [],
    });
    locationRows[l - locationFrom] = source.locationRowStarts[l + 1]! -
      source.locationRowStarts[l]!;
  }
  const columns = OBSERVATION_COLUMNS.map((name) =>
    copyColumn(
      NUMERIC_OBSERVATION_COLUMNS.has(name),
      source.column(`observation.${name}`),
      rowFrom,
      rowTo,
    )
  );
  const rows = rowTo - rowFrom;
  const temporalExtent = temporalExtentOf(
    columns[OBSERVATION_COLUMNS.indexOf("ActivityStartDate")],
  );
  return { input, built: { rows, locations, locationRows, columns, temporalExtent } };
}

/** A location column's value as the loader first read it: a number, text, or null. */
function scalarAt(column: Column, row: number): Scalar {
  switch (column.kind) {
    case "dict":
      return column.values[column.codes[row]!] ?? null;
    case "number": {
      const value = column.values[row]!;
      return Number.isNaN(value) ? null : value;
    }
    default:
      throw new TypeError(`Cannot copy a ${column.kind} location column`);
  }
}

/**
 * A store's column over rows `from .. to - 1`, as a built dataset's column:
 * numbers as they are (a view), text with a dictionary of the values these
 * rows have, in the order they first have them.
 */
function copyColumn(
  numeric: boolean,
  column: Column | undefined,
  from: number,
  to: number,
): BuiltColumn {
  if (numeric) {
    return {
      kind: "number",
      values: column?.kind === "number"
        ? column.values.subarray(from, to)
        : new Float64Array(to - from).fill(Number.NaN),
    };
  }
  const n = to - from;
  if (column?.kind !== "dict") {
    return { kind: "dict", values: [null], codes: new Uint8Array(n), counts: Uint32Array.of(n) };
  }
  const source = column.codes;
  // Old code to new code, made on first sight of each.
  const mapped = new Int32Array(column.values.length).fill(-1);
  mapped[0] = 0;
  const values: Scalar[] = [null];
  const wide = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const old = source[from + i]!;
    let code = mapped[old]!;
    if (code === -1) {
      code = mapped[old] = values.length;
      values.push(column.values[old] ?? null);
    }
    wide[i] = code;
  }
  const codes = codeArray(values.length - 1, n);
  codes.set(wide);
  return { kind: "dict", values, codes, counts: countCodes(codes, values.length) };
}

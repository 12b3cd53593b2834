import type { Column, ColumnTable } from "../odata/mod.ts";
import type { CollectionField, FieldLevel } from "./fields.ts";

/** One dataset: its ids and its metadata fields as published. */
export interface DatasetRecord {
  /** The dataset's UUID, lower-case. */
  readonly id: string;
  readonly doi: string;
  /** The dataset's folder name. */
  readonly folder: string;
  /** Metadata fields by name: text, lists of text, or null. */
  readonly metadata: Readonly<Record<string, string | readonly string[] | null>>;
}

/** What {@linkcode WaterStore} is built from. */
export interface WaterStoreParts {
  readonly datasets: readonly DatasetRecord[];
  /** Locations of dataset `d` are `datasetLocationStarts[d] .. datasetLocationStarts[d + 1] - 1`. */
  readonly datasetLocationStarts: Uint32Array;
  /** Observations of location `l` are rows `locationRowStarts[l] .. locationRowStarts[l + 1] - 1`. */
  readonly locationRowStarts: Uint32Array;
  /** Columns by storage key, each over the rows of its own level. */
  readonly columns: ReadonlyMap<string, Column>;
}

const LEVEL_DEPTH: Readonly<Record<FieldLevel, number>> = { dataset: 0, location: 1, observation: 2 };

/**
 * The in-memory water-data store: datasets, their locations and their
 * observations as typed-array columns. Observations are stored grouped by
 * location and locations grouped by dataset, so a location or dataset is a
 * contiguous range of rows, and ids are row numbers plus one.
 */
export class WaterStore {
  readonly datasets: readonly DatasetRecord[];
  readonly datasetLocationStarts: Uint32Array;
  readonly locationRowStarts: Uint32Array;
  readonly #columns: ReadonlyMap<string, Column>;
  readonly #views = new Map<string, Column>();

  /**
   * Wraps built parts.
   * @param parts the columns and group boundaries
   */
  constructor(parts: WaterStoreParts) {
    this.datasets = parts.datasets;
    this.datasetLocationStarts = parts.datasetLocationStarts;
    this.locationRowStarts = parts.locationRowStarts;
    this.#columns = parts.columns;
  }

  /** Number of datasets. */
  get datasetCount(): number {
    return this.datasets.length;
  }

  /** Number of locations. */
  get locationCount(): number {
    return this.locationRowStarts.length - 1;
  }

  /** Number of observations. */
  get observationCount(): number {
    return this.locationRowStarts[this.locationRowStarts.length - 1] ?? 0;
  }

  /**
   * Rows at a level.
   * @param level the level
   * @returns its row count
   */
  lengthOf(level: FieldLevel): number {
    switch (level) {
      case "dataset":
        return this.datasetCount;
      case "location":
        return this.locationCount;
      case "observation":
        return this.observationCount;
    }
  }

  /**
   * A column over the rows of its own level.
   * @param key storage key, e.g. `observation.ResultValue`
   * @returns the column, or undefined for an unknown key
   */
  column(key: string): Column | undefined {
    return this.#columns.get(key);
  }

  /**
   * A column seen from a finer level: a location field seen from observations
   * is a group column over the location ranges, and so on.
   * @param key storage key
   * @param level the level of the rows to read it from
   * @returns the column, or undefined when the key is unknown or finer than `level`
   */
  columnAt(key: string, level: FieldLevel): Column | undefined {
    const own = this.#columns.get(key);
    if (own === undefined) return undefined;
    const ownLevel = key.slice(0, key.indexOf(".")) as FieldLevel;
    if (LEVEL_DEPTH[ownLevel] > LEVEL_DEPTH[level]) return undefined;
    if (ownLevel === level) return own;
    const cacheKey = `${level}:${key}`;
    const cached = this.#views.get(cacheKey);
    if (cached !== undefined) return cached;
    let column: Column = own;
    if (ownLevel === "dataset") column = { kind: "group", starts: this.datasetLocationStarts, column };
    if (level === "observation") column = { kind: "group", starts: this.locationRowStarts, column };
    this.#views.set(cacheKey, column);
    return column;
  }

  /**
   * A table of the rows of one level whose columns are named by a
   * collection's public field names.
   * @param level the level of the rows
   * @param fields public names to fields
   * @returns the table
   */
  view(level: FieldLevel, fields: ReadonlyMap<string, CollectionField>): ColumnTable {
    const length = this.lengthOf(level);
    return {
      length,
      column: (name: string) => {
        const field = fields.get(name);
        return field === undefined ? undefined : this.columnAt(field.source.key, level);
      },
    };
  }

  /**
   * The location of an observation row.
   * @param row observation row
   * @returns its location index
   */
  locationOfRow(row: number): number {
    return upperBound(this.locationRowStarts, row) - 1;
  }

  /**
   * The dataset of a location.
   * @param location location index
   * @returns its dataset index
   */
  datasetOfLocation(location: number): number {
    return upperBound(this.datasetLocationStarts, location) - 1;
  }
}

/** Index of the first element of a sorted array that is > value. */
function upperBound(sorted: Uint32Array, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

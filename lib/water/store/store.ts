import {
  type Column,
  type ColumnTable,
  rowNumberAt,
  type RowNumberColumn,
  rowsBelow,
  rowWithNumber,
} from "../../columnar/mod.ts";
import type { CollectionField, FieldLevel } from "../fields.ts";

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
  /**
   * The highest location and observation ids handed out, by this store or
   * the stores it replaced (see {@linkcode WaterStore.isRetiredId}).
   * @default the highest ids of this store
   */
  readonly issuedIds?: IssuedIds;
}

/** The highest ids handed out at the levels with integer ids. */
export interface IssuedIds {
  readonly location: number;
  readonly observation: number;
}

/** The levels whose ids are integers: locations and observations. */
export type RowLevel = "location" | "observation";

const LEVEL_DEPTH: Readonly<Record<FieldLevel, number>> = {
  dataset: 0,
  location: 1,
  observation: 2,
};

/**
 * The in-memory water-data store: datasets, their locations and their
 * observations as typed-array columns. Observations are stored grouped by
 * location and locations grouped by dataset, so a location or dataset is a
 * contiguous range of rows. Location and observation ids ascend with rows:
 * row numbers plus one, or, after a reload kept some datasets' ids, row
 * numbers plus an offset per dataset (the `Id` columns say which).
 */
export class WaterStore {
  readonly datasets: readonly DatasetRecord[];
  readonly datasetLocationStarts: Uint32Array;
  readonly locationRowStarts: Uint32Array;
  /** The highest ids handed out; see {@linkcode WaterStore.isRetiredId}. */
  readonly issuedIds: IssuedIds;
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
    const last = (level: RowLevel): number => {
      const length = this.lengthOf(level);
      return length === 0 ? 0 : this.idOf(level, length - 1);
    };
    this.issuedIds = parts.issuedIds ??
      { location: last("location"), observation: last("observation") };
  }

  /**
   * The id of a location or observation row.
   * @param level `location` or `observation`
   * @param row the row
   * @returns its id
   */
  idOf(level: RowLevel, row: number): number {
    return rowNumberAt(this.#idColumn(level), row);
  }

  /**
   * The row of a location or observation id.
   * @param level `location` or `observation`
   * @param id the id
   * @returns the row, or -1 when no row has that id
   */
  rowOfId(level: RowLevel, id: number): number {
    return rowWithNumber(this.#idColumn(level), this.lengthOf(level), id);
  }

  /**
   * The rows whose id is at most `id`: where a page after `$skiptoken=Id:<id>` starts.
   * @param level `location` or `observation`
   * @param id the id
   * @returns a row count
   */
  rowsThroughId(level: RowLevel, id: number): number {
    return rowsBelow(this.#idColumn(level), this.lengthOf(level), Math.floor(id) + 1);
  }

  /**
   * Whether an id was handed out to a row that is no longer here: a row of a
   * dataset replaced or removed since (its new version, if any, has new ids;
   * ids are never handed out twice while a server runs).
   * @param level `location` or `observation`
   * @param id the id
   * @returns true for such an id
   */
  isRetiredId(level: RowLevel, id: number): boolean {
    return Number.isInteger(id) && id >= 1 && id <= this.issuedIds[level] &&
      this.rowOfId(level, id) === -1;
  }

  #idColumn(level: RowLevel): RowNumberColumn {
    const column = this.#columns.get(`${level}.Id`);
    return column?.kind === "rownumber" ? column : { kind: "rownumber", offset: 1 };
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
    if (ownLevel === "dataset") {
      column = { kind: "group", starts: this.datasetLocationStarts, column };
    }
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

/**
 * Index of the first element of a sorted array that is > value.
 * @param sorted ascending values
 * @param value the value sought
 * @returns the index, `sorted.length` when none is greater
 */
export function upperBound(sorted: Uint32Array, value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! <= value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

import { jsonErrorPosition } from "../../config/_internal.ts";
import { isUuid } from "../../crypto/_internal.ts";
import { nameUuid } from "../../crypto/mod.ts";
import { WaterError } from "../errors.ts";
import { DERIVED_METADATA_COLUMNS, LIST_METADATA_COLUMNS, METADATA_COLUMNS } from "../fields.ts";
import type { DatasetInput } from "../store/dataset_reader.ts";

const DOI = /^10\.[0-9]{4,9}\/\S+$/;

/**
 * Reads and checks a dataset's `metadata.json`: the Metadata fields, an
 * optional `Id` (a UUID; derived from the DOI when absent, so it never
 * changes), `RegionIds` for all its locations and `LocationRegionIds` for
 * particular ones. Unknown keys are ignored.
 * @param text the file's text
 * @param folder the dataset's folder name
 * @returns the dataset input
 * @throws {WaterError} `ERR_WATER_DATASET` naming the key at fault, or the line
 * and column of a JSON syntax error
 */
export function readDatasetMetadata(text: string, folder: string): DatasetInput {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    const where = lineAndColumn(text, jsonErrorPosition(text));
    throw new WaterError(
      "ERR_WATER_DATASET",
      `Cannot parse metadata.json at ${where}: it is not valid JSON`,
      {
        cause,
      },
    );
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw invalid("the file must hold a JSON object");
  }
  const record = parsed as Record<string, unknown>;
  const doi = record["DOI"];
  if (typeof doi !== "string" || !DOI.test(doi)) {
    throw invalid(`"DOI" must be a DOI such as "10.25976/abcd-ef12": found ${JSON.stringify(doi)}`);
  }
  const name = record["DatasetName"];
  if (typeof name !== "string" || name.trim() === "") {
    throw invalid('"DatasetName" must be a non-empty string');
  }
  const metadata: Record<string, string | readonly string[] | null> = {};
  for (const key of METADATA_COLUMNS) {
    // Derived from the data when the store is built; a value in the file is not used.
    if (DERIVED_METADATA_COLUMNS.has(key)) continue;
    const value = record[key];
    if (LIST_METADATA_COLUMNS.has(key)) {
      metadata[key] = readList(value, key);
    } else if (value === undefined || value === null) {
      metadata[key] = null;
    } else if (typeof value === "string") {
      if (key.endsWith("Timestamp") && Number.isNaN(Date.parse(value))) {
        throw invalid(`"${key}" must be an ISO 8601 date-time such as "2020-01-01T15:30:00.000Z"`);
      }
      metadata[key] = value;
    } else {
      throw invalid(`"${key}" must be a string or null: found ${typeof value}`);
    }
  }
  const id = record["Id"];
  if (id !== undefined && (typeof id !== "string" || !isUuid(id))) {
    throw invalid(`"Id" must be a UUID: found ${JSON.stringify(id)}`);
  }
  const regionIds = readList(record["RegionIds"], "RegionIds");
  const perLocation = record["LocationRegionIds"];
  const locationRegionIds = new Map<string, readonly string[]>();
  if (perLocation !== undefined) {
    if (typeof perLocation !== "object" || perLocation === null || Array.isArray(perLocation)) {
      throw invalid(
        '"LocationRegionIds" must be an object from MonitoringLocationID to a list of region ids',
      );
    }
    for (const [location, regions] of Object.entries(perLocation)) {
      locationRegionIds.set(location, readList(regions, `LocationRegionIds.${location}`));
    }
  }
  return {
    id: typeof id === "string" ? id.toLowerCase() : nameUuid(`https://doi.org/${doi}`),
    doi,
    folder,
    metadata,
    regionIds,
    locationRegionIds,
  };
}

function readList(value: unknown, key: string): readonly string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return [value];
  if (Array.isArray(value) && value.every((item) => typeof item === "string")) return value;
  throw invalid(`"${key}" must be a list of strings`);
}

function invalid(detail: string): WaterError {
  return new WaterError("ERR_WATER_DATASET", `Cannot read metadata.json: ${detail}`);
}

function lineAndColumn(text: string, position: number): string {
  const before = text.slice(0, position);
  const line = before.split("\n").length;
  const column = position - before.lastIndexOf("\n");
  return `line ${line}, column ${column}`;
}

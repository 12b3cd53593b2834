import type { FilterFieldType } from "../odata/mod.ts";

/** The level a value belongs to: a dataset, one of its locations, or an observation. */
export type FieldLevel = "dataset" | "location" | "observation";

/** A field of the store, named by its storage key. */
export interface SourceField {
  /** Storage key, unique across levels, e.g. `location.MonitoringLocationName`. */
  readonly key: string;
  readonly level: FieldLevel;
  readonly type: FilterFieldType;
  readonly multiValued?: boolean;
}

/** A public field of a collection: its name and the store field behind it. */
export interface CollectionField {
  readonly name: string;
  readonly source: SourceField;
}

/** The standard 40-column DataStream CSV header (the upload template and export order). */
export const DATASTREAM_CSV_COLUMNS = [
  "DatasetName",
  "MonitoringLocationID",
  "MonitoringLocationName",
  "MonitoringLocationLatitude",
  "MonitoringLocationLongitude",
  "MonitoringLocationHorizontalCoordinateReferenceSystem",
  "MonitoringLocationHorizontalAccuracyMeasure",
  "MonitoringLocationHorizontalAccuracyUnit",
  "MonitoringLocationVerticalMeasure",
  "MonitoringLocationVerticalUnit",
  "MonitoringLocationType",
  "ActivityType",
  "ActivityMediaName",
  "ActivityStartDate",
  "ActivityStartTime",
  "ActivityEndDate",
  "ActivityEndTime",
  "ActivityDepthHeightMeasure",
  "ActivityDepthHeightUnit",
  "SampleCollectionEquipmentName",
  "CharacteristicName",
  "MethodSpeciation",
  "ResultSampleFraction",
  "ResultValue",
  "ResultUnit",
  "ResultValueType",
  "ResultDetectionCondition",
  "ResultDetectionQuantitationLimitMeasure",
  "ResultDetectionQuantitationLimitUnit",
  "ResultDetectionQuantitationLimitType",
  "ResultStatusID",
  "ResultComment",
  "ResultAnalyticalMethodID",
  "ResultAnalyticalMethodContext",
  "ResultAnalyticalMethodName",
  "AnalysisStartDate",
  "AnalysisStartTime",
  "AnalysisStartTimeZone",
  "LaboratoryName",
  "LaboratorySampleID",
] as const;

/** Columns a data file may add to the standard header; the API returns them. */
export const OPTIONAL_CSV_COLUMNS = ["ActivityStartTimeZone", "ActivityEndTimeZone"] as const;

/** Columns that may not be empty in a data row (DataStream schema `primary.json`). */
export const REQUIRED_CSV_COLUMNS = [
  "DatasetName",
  "MonitoringLocationID",
  "MonitoringLocationName",
  "MonitoringLocationType",
  "MonitoringLocationLatitude",
  "MonitoringLocationLongitude",
  "MonitoringLocationHorizontalCoordinateReferenceSystem",
  "ActivityType",
  "ActivityMediaName",
  "ActivityStartDate",
  "CharacteristicName",
  "ResultValueType",
] as const;

/** The observation fields of `/Observations`, in order (ActivityType through LaboratorySampleID). */
export const OBSERVATION_COLUMNS = [
  "ActivityType",
  "ActivityMediaName",
  "ActivityStartDate",
  "ActivityStartTime",
  "ActivityStartTimeZone",
  "ActivityEndDate",
  "ActivityEndTime",
  "ActivityEndTimeZone",
  "ActivityDepthHeightMeasure",
  "ActivityDepthHeightUnit",
  "SampleCollectionEquipmentName",
  "CharacteristicName",
  "MethodSpeciation",
  "ResultSampleFraction",
  "ResultValue",
  "ResultUnit",
  "ResultValueType",
  "ResultDetectionCondition",
  "ResultDetectionQuantitationLimitUnit",
  "ResultDetectionQuantitationLimitMeasure",
  "ResultDetectionQuantitationLimitType",
  "ResultStatusID",
  "ResultComment",
  "ResultAnalyticalMethodID",
  "ResultAnalyticalMethodContext",
  "ResultAnalyticalMethodName",
  "AnalysisStartDate",
  "AnalysisStartTime",
  "AnalysisStartTimeZone",
  "LaboratoryName",
  "LaboratorySampleID",
] as const;

/** Observation columns holding numbers; the others hold text, dates and times. */
export const NUMERIC_OBSERVATION_COLUMNS: ReadonlySet<string> = new Set([
  "ActivityDepthHeightMeasure",
  "ResultValue",
  "ResultDetectionQuantitationLimitMeasure",
]);

const DATE_COLUMNS: ReadonlySet<string> = new Set([
  "ActivityStartDate",
  "ActivityEndDate",
  "AnalysisStartDate",
]);

/** The location columns of the data file, as stored per location. */
export const LOCATION_COLUMNS = [
  "MonitoringLocationID",
  "MonitoringLocationName",
  "MonitoringLocationLatitude",
  "MonitoringLocationLongitude",
  "MonitoringLocationHorizontalCoordinateReferenceSystem",
  "MonitoringLocationHorizontalAccuracyMeasure",
  "MonitoringLocationHorizontalAccuracyUnit",
  "MonitoringLocationVerticalMeasure",
  "MonitoringLocationVerticalUnit",
  "MonitoringLocationType",
] as const;

/** Location columns holding numbers. */
export const NUMERIC_LOCATION_COLUMNS: ReadonlySet<string> = new Set([
  "MonitoringLocationLatitude",
  "MonitoringLocationLongitude",
  "MonitoringLocationHorizontalAccuracyMeasure",
  "MonitoringLocationVerticalMeasure",
]);

/** Dataset-level metadata fields of `/Metadata`, after `Id`, in order. */
export const METADATA_COLUMNS = [
  "DOI",
  "Version",
  "DatasetName",
  "DataStewardEmail",
  "DataCollectionOrganization",
  "DataUploadOrganization",
  "ProgressCode",
  "MaintenanceFrequencyCode",
  "Abstract",
  "DataCollectionInformation",
  "DataProcessing",
  "FundingSources",
  "DataSourceURL",
  "OtherDataSources",
  "Citation",
  "Licence",
  "Disclaimer",
  "TopicCategoryCode",
  "Keywords",
  "CreateTimestamp",
  "PublishedTimestamp",
  "TemporalExtent",
] as const;

/** Metadata fields holding lists of strings. */
export const LIST_METADATA_COLUMNS: ReadonlySet<string> = new Set([
  "TopicCategoryCode",
  "Keywords",
  "TemporalExtent",
]);

/**
 * Metadata fields the store derives from the data, never read from
 * `metadata.json`, and selectable only (DataStream: "It is not
 * filterable"): `TemporalExtent`, the `["YYYY-MM-DD", "YYYY-MM-DD"]` range of
 * the dataset's activity start dates.
 */
export const DERIVED_METADATA_COLUMNS: ReadonlySet<string> = new Set(["TemporalExtent"]);

function field(
  level: FieldLevel,
  name: string,
  type: FilterFieldType,
  multiValued = false,
): SourceField {
  return { key: `${level}.${name}`, level, type, ...(multiValued ? { multiValued } : {}) };
}

function observationType(name: string): FilterFieldType {
  if (NUMERIC_OBSERVATION_COLUMNS.has(name)) return "number";
  if (DATE_COLUMNS.has(name)) return "date";
  return "string";
}

/** Every field of the store, by storage key. */
export const SOURCE_FIELDS: ReadonlyMap<string, SourceField> = (() => {
  const fields: SourceField[] = [
    field("dataset", "Id", "guid"),
    ...METADATA_COLUMNS.map((name) =>
      field(
        "dataset",
        name,
        name.endsWith("Timestamp") ? "datetime" : "string",
        LIST_METADATA_COLUMNS.has(name),
      )
    ),
    field("location", "Id", "integer"),
    ...LOCATION_COLUMNS.map((name) =>
      field("location", name, NUMERIC_LOCATION_COLUMNS.has(name) ? "number" : "string")
    ),
    field("location", "LatitudeNormalized", "number"),
    field("location", "LongitudeNormalized", "number"),
    field("location", "HorizontalCoordinateReferenceSystemNormalized", "string"),
    field("location", "RegionId", "string", true),
    field("observation", "Id", "integer"),
    ...OBSERVATION_COLUMNS.map((name) => field("observation", name, observationType(name))),
    field("observation", "ActivityGroupType", "string"),
    field("observation", "ActivityStartYear", "integer"),
  ];
  return new Map(fields.map((f) => [f.key, f]));
})();

function source(key: string): SourceField {
  const found = SOURCE_FIELDS.get(key);
  if (found === undefined) throw new TypeError(`Cannot find store field "${key}"`);
  return found;
}

function named(name: string, key: string): CollectionField {
  return { name, source: source(key) };
}

/** The four collections of the water-data API. */
export type CollectionName = "Metadata" | "Locations" | "Observations" | "Records";

/** A collection: its level, its selectable fields in order, and its filterable fields. */
export interface CollectionSchema {
  readonly name: CollectionName;
  readonly level: FieldLevel;
  /** Selectable fields in the default output order. */
  readonly select: readonly CollectionField[];
  /** Filterable fields by case-sensitive name: the selectable ones and filter-only ones. */
  readonly filter: ReadonlyMap<string, CollectionField>;
}

const LOCATION_SELECT: readonly CollectionField[] = [
  named("Id", "location.Id"),
  named("DOI", "dataset.DOI"),
  named("ID", "location.MonitoringLocationID"),
  named("Name", "location.MonitoringLocationName"),
  named("Latitude", "location.MonitoringLocationLatitude"),
  named("Longitude", "location.MonitoringLocationLongitude"),
  named(
    "HorizontalCoordinateReferenceSystem",
    "location.MonitoringLocationHorizontalCoordinateReferenceSystem",
  ),
  named("HorizontalAccuracyMeasure", "location.MonitoringLocationHorizontalAccuracyMeasure"),
  named("HorizontalAccuracyUnit", "location.MonitoringLocationHorizontalAccuracyUnit"),
  named("VerticalMeasure", "location.MonitoringLocationVerticalMeasure"),
  named("VerticalUnit", "location.MonitoringLocationVerticalUnit"),
  named("MonitoringLocationType", "location.MonitoringLocationType"),
  named("LatitudeNormalized", "location.LatitudeNormalized"),
  named("LongitudeNormalized", "location.LongitudeNormalized"),
  named(
    "HorizontalCoordinateReferenceSystemNormalized",
    "location.HorizontalCoordinateReferenceSystemNormalized",
  ),
];

const OBSERVATION_FIELDS: readonly CollectionField[] = OBSERVATION_COLUMNS.map((name) =>
  named(name, `observation.${name}`)
);

/** Filter-only names every collection accepts on the observation level. */
const OBSERVATION_FILTER_EXTRAS: readonly CollectionField[] = [
  named("ActivityGroupType", "observation.ActivityGroupType"),
  named("ActivityStartYear", "observation.ActivityStartYear"),
  named("ActivityStartDateYear", "observation.ActivityStartYear"),
];

/** Filter-only names on the location level (regions, normalized coordinates, short names). */
const LOCATION_FILTER_EXTRAS: readonly CollectionField[] = [
  named("LocationId", "location.Id"),
  named("RegionId", "location.RegionId"),
  named("MonitoringLocationType", "location.MonitoringLocationType"),
  named("Latitude", "location.MonitoringLocationLatitude"),
  named("Longitude", "location.MonitoringLocationLongitude"),
  named("LatitudeNormalized", "location.LatitudeNormalized"),
  named("LongitudeNormalized", "location.LongitudeNormalized"),
];

function filterMap(
  ...groups: readonly (readonly CollectionField[])[]
): ReadonlyMap<string, CollectionField> {
  const map = new Map<string, CollectionField>();
  for (const group of groups) {
    for (const f of group) if (!map.has(f.name)) map.set(f.name, f);
  }
  return map;
}

const METADATA_SELECT: readonly CollectionField[] = [
  named("Id", "dataset.Id"),
  ...METADATA_COLUMNS.map((name) => named(name, `dataset.${name}`)),
];

const OBSERVATIONS_SELECT: readonly CollectionField[] = [
  named("Id", "observation.Id"),
  named("LocationId", "location.Id"),
  named("DOI", "dataset.DOI"),
  ...OBSERVATION_FIELDS,
];

const RECORDS_SELECT: readonly CollectionField[] = [
  named("Id", "observation.Id"),
  named("DOI", "dataset.DOI"),
  named("DatasetName", "dataset.DatasetName"),
  ...LOCATION_COLUMNS.map((name) => named(name, `location.${name}`)),
  ...OBSERVATION_FIELDS,
];

/** The collections by name. */
export const COLLECTIONS: ReadonlyMap<CollectionName, CollectionSchema> = new Map(
  [
    ["Metadata", {
      name: "Metadata",
      level: "dataset",
      select: METADATA_SELECT,
      filter: filterMap(
        METADATA_SELECT.filter((f) => !f.source.multiValued),
        METADATA_SELECT.filter((f) =>
          f.source.multiValued === true && !DERIVED_METADATA_COLUMNS.has(f.name)
        ),
        LOCATION_FILTER_EXTRAS,
        [named("Name", "location.MonitoringLocationName")],
        OBSERVATION_FIELDS,
        OBSERVATION_FILTER_EXTRAS,
      ),
    }],
    ["Locations", {
      name: "Locations",
      level: "location",
      select: LOCATION_SELECT,
      filter: filterMap(
        LOCATION_SELECT,
        LOCATION_FILTER_EXTRAS,
        [named("DatasetName", "dataset.DatasetName")],
        OBSERVATION_FIELDS,
        OBSERVATION_FILTER_EXTRAS,
      ),
    }],
    ["Observations", {
      name: "Observations",
      level: "observation",
      select: OBSERVATIONS_SELECT,
      filter: filterMap(
        OBSERVATIONS_SELECT,
        OBSERVATION_FILTER_EXTRAS,
        LOCATION_FILTER_EXTRAS,
        [named("DatasetName", "dataset.DatasetName")],
      ),
    }],
    ["Records", {
      name: "Records",
      level: "observation",
      select: RECORDS_SELECT,
      filter: filterMap(RECORDS_SELECT, OBSERVATION_FILTER_EXTRAS, LOCATION_FILTER_EXTRAS),
    }],
  ] as const,
);

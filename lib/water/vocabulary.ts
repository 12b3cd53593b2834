/**
 * DataStream controlled vocabularies: the strict ("primary") value lists of
 * `@datastreamapp/data-schema` v3.0.0, and the ActivityType to
 * ActivityGroupType lookup.
 * @module
 */

/** The 35 strict ActivityType values. */
export const ACTIVITY_TYPES = [
  "Field Msr/Obs",
  "Field Msr/Obs-Continuous Time Series",
  "Field Msr/Obs-Integrated Flow Proportioned",
  "Field Msr/Obs-Integrated Time Series",
  "Field Msr/Obs-Integrated Vertical Profile",
  "Field Msr/Obs-Portable Data Logger",
  "Quality Control Field Replicate Msr/Obs",
  "Quality Control Field Replicate Portable Data Logger",
  "Quality Control Field Sample Equipment Rinsate Blank",
  "Quality Control Sample-Blind Duplicate",
  "Quality Control Sample-Field Blank",
  "Quality Control Sample-Field Replicate",
  "Quality Control Sample-Lab Blank",
  "Quality Control Sample-Lab Duplicate",
  "Quality Control Sample-Lab Matrix Spike",
  "Quality Control Sample-Lab Re-Analysis",
  "Quality Control Sample-Lab Spike",
  "Quality Control Sample-Lab Split",
  "Quality Control Sample-Lab Surrogate Control Standard",
  "Quality Control Sample-Lab Surrogate Control Standard Duplicate",
  "Quality Control Sample-Reference Sample",
  "Quality Control Sample-Trip Blank",
  "Quality Control-Calibration Check",
  "Sample-Composite With Parents",
  "Sample-Composite Without Parents",
  "Sample-Field Split",
  "Sample-Integrated Flow Proportioned",
  "Sample-Integrated Horizontal and Vertical Composite Profile",
  "Sample-Integrated Horizontal Profile",
  "Sample-Integrated Time Series",
  "Sample-Integrated Vertical Profile",
  "Sample-Other",
  "Sample-Positive Control",
  "Sample-Routine",
  "Unspecified",
] as const;

/** A strict ActivityType value. */
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

/** The 7 ActivityGroupType values (filter-only in the API, derived from ActivityType). */
export const ACTIVITY_GROUP_TYPES = [
  "Continuous Data",
  "Field Measure",
  "Lab Sample",
  "Other",
  "Quality Control - Field Measure",
  "Quality Control - Lab Sample",
  "Unspecified",
] as const;

/** An ActivityGroupType value. */
export type ActivityGroupType = (typeof ACTIVITY_GROUP_TYPES)[number];

/** The 8 strict ActivityMediaName values. */
export const ACTIVITY_MEDIA_NAMES = [
  "Ambient Air",
  "Groundwater",
  "Ocean Water",
  "Porewater",
  "Rainwater",
  "Subsurface Soil/Sediment",
  "Surface Water",
  "Surface Water Sediment",
] as const;

/** The 24 strict MonitoringLocationType values. */
export const MONITORING_LOCATION_TYPES = [
  "Atmosphere",
  "Borehole",
  "Canal Drainage",
  "Canal Irrigation",
  "Canal Transport",
  "Dug Well",
  "Estuary",
  "Great Lake",
  "Lake/Pond",
  "Multilevel Well",
  "Nested Well",
  "Ocean",
  "Other-Ground Water",
  "Piezometer",
  "Pond-Stormwater",
  "Reservoir",
  "River/Stream",
  "Seep",
  "Spring",
  "Storm Sewer",
  "Sump",
  "Unspecified",
  "Well",
  "Wetland",
] as const;

/** The 5 strict ResultValueType values. */
export const RESULT_VALUE_TYPES = [
  "Actual",
  "Blank Corrected",
  "Calculated",
  "Control Adjusted",
  "Estimated",
] as const;

/** The 6 strict ResultDetectionCondition values. */
export const RESULT_DETECTION_CONDITIONS = [
  "Above Detection/Quantification Limit",
  "Below Detection/Quantification Limit",
  "Detected Not Quantified",
  "Not Detected",
  "Not Reported",
  "Unable to Measure",
] as const;

/** The 4 strict ResultDetectionQuantitationLimitType values. */
export const RESULT_DETECTION_QUANTITATION_LIMIT_TYPES = [
  "Blank-adjusted method detect limit",
  "Method Detection Level",
  "Reporting Limit",
  "Sample Detection Limit",
] as const;

/** The 6 strict ResultStatusID values (`Final` and `Accepted` are deprecated but valid). */
export const RESULT_STATUS_IDS = [
  "Accepted",
  "Final",
  "Historical",
  "Preliminary",
  "Provisional",
  "Validated",
] as const;

/** The 6 strict MonitoringLocationHorizontalCoordinateReferenceSystem values. */
export const HORIZONTAL_COORDINATE_REFERENCE_SYSTEMS = [
  "NAD27",
  "NAD83",
  "OTHER",
  "UNKWN",
  "WGS72",
  "WGS84",
] as const;

/** The strict ActivityDepthHeightUnit values. */
export const ACTIVITY_DEPTH_HEIGHT_UNITS = ["cm", "ft", "m"] as const;

/** The strict MonitoringLocationHorizontalAccuracyUnit values. */
export const HORIZONTAL_ACCURACY_UNITS = ["km", "m"] as const;

/** The strict MonitoringLocationVerticalUnit values. */
export const VERTICAL_UNITS = ["ft", "m", "MASL"] as const;

/**
 * The region ids the API filters on with `RegionId`: partner hubs, the
 * country, and its provinces and territories.
 */
export const REGION_IDS = [
  "hub.atlantic",
  "hub.greatlakes",
  "hub.lakewinnipeg",
  "hub.mackenzie",
  "hub.pacific",
  "admin.2.ca",
  "admin.4.ca.ab",
  "admin.4.ca.bc",
  "admin.4.ca.mb",
  "admin.4.ca.nb",
  "admin.4.ca.nl",
  "admin.4.ca.ns",
  "admin.4.ca.nt",
  "admin.4.ca.nu",
  "admin.4.ca.on",
  "admin.4.ca.pe",
  "admin.4.ca.qc",
  "admin.4.ca.sk",
  "admin.4.ca.yt",
] as const;

/** A region id. */
export type RegionId = (typeof REGION_IDS)[number];

// The group of each strict ActivityType. "Field Msr/Obs*" is measured on site,
// "Sample-*" goes to a lab, and a QC type follows the kind of activity it checks.
const GROUP_BY_ACTIVITY_TYPE: ReadonlyMap<string, ActivityGroupType> = new Map<
  string,
  ActivityGroupType
>([
  ["Field Msr/Obs", "Field Measure"],
  ["Field Msr/Obs-Continuous Time Series", "Continuous Data"],
  ["Field Msr/Obs-Integrated Flow Proportioned", "Field Measure"],
  ["Field Msr/Obs-Integrated Time Series", "Field Measure"],
  ["Field Msr/Obs-Integrated Vertical Profile", "Field Measure"],
  ["Field Msr/Obs-Portable Data Logger", "Field Measure"],
  ["Quality Control Field Replicate Msr/Obs", "Quality Control - Field Measure"],
  ["Quality Control Field Replicate Portable Data Logger", "Quality Control - Field Measure"],
  ["Quality Control Field Sample Equipment Rinsate Blank", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Blind Duplicate", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Field Blank", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Field Replicate", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Lab Blank", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Lab Duplicate", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Lab Matrix Spike", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Lab Re-Analysis", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Lab Spike", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Lab Split", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Lab Surrogate Control Standard", "Quality Control - Lab Sample"],
  [
    "Quality Control Sample-Lab Surrogate Control Standard Duplicate",
    "Quality Control - Lab Sample",
  ],
  ["Quality Control Sample-Reference Sample", "Quality Control - Lab Sample"],
  ["Quality Control Sample-Trip Blank", "Quality Control - Lab Sample"],
  ["Quality Control-Calibration Check", "Quality Control - Field Measure"],
  ["Sample-Composite With Parents", "Lab Sample"],
  ["Sample-Composite Without Parents", "Lab Sample"],
  ["Sample-Field Split", "Lab Sample"],
  ["Sample-Integrated Flow Proportioned", "Lab Sample"],
  ["Sample-Integrated Horizontal and Vertical Composite Profile", "Lab Sample"],
  ["Sample-Integrated Horizontal Profile", "Lab Sample"],
  ["Sample-Integrated Time Series", "Lab Sample"],
  ["Sample-Integrated Vertical Profile", "Lab Sample"],
  ["Sample-Other", "Lab Sample"],
  ["Sample-Positive Control", "Quality Control - Lab Sample"],
  ["Sample-Routine", "Lab Sample"],
  ["Unspecified", "Unspecified"],
]);

/**
 * Maps an ActivityType to its ActivityGroupType. Strict values use the
 * schema's lookup; legacy values fall back to prefix rules, and anything
 * unrecognised is `"Other"`.
 * @param activityType an ActivityType value, strict or legacy
 * @returns the group, or null when `activityType` is empty
 * @example
 * ```ts
 * activityGroupTypeOf("Sample-Routine"); // "Lab Sample"
 * activityGroupTypeOf("Field Msr/Obs-Habitat Assessment"); // "Field Measure"
 * ```
 */
export function activityGroupTypeOf(activityType: string): ActivityGroupType | null {
  if (activityType === "") return null;
  const exact = GROUP_BY_ACTIVITY_TYPE.get(activityType);
  if (exact !== undefined) return exact;
  return legacyGroupTypeOf(activityType);
}

function legacyGroupTypeOf(activityType: string): ActivityGroupType {
  if (activityType.endsWith("Continuous Time Series")) {
    return activityType.startsWith("Quality Control")
      ? "Quality Control - Field Measure"
      : "Continuous Data";
  }
  if (activityType.startsWith("Field Msr/Obs")) return "Field Measure";
  if (activityType.includes("Positive Control") || activityType.includes("Negative Control")) {
    return "Quality Control - Lab Sample";
  }
  if (activityType.startsWith("Quality Control")) {
    // A QC activity on a sample (blank, spike, split, duplicate) checks lab
    // work; the rest (replicate readings, calibration checks) checks field work.
    return activityType.includes("Sample") || activityType.includes("Lab")
      ? "Quality Control - Lab Sample"
      : "Quality Control - Field Measure";
  }
  if (activityType.startsWith("Sample")) return "Lab Sample";
  if (activityType === "Unspecified") return "Unspecified";
  return "Other";
}

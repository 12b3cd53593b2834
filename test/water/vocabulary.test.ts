import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ACTIVITY_DEPTH_HEIGHT_UNITS,
  ACTIVITY_GROUP_TYPES,
  ACTIVITY_MEDIA_NAMES,
  ACTIVITY_TYPES,
  activityGroupTypeOf,
  HORIZONTAL_ACCURACY_UNITS,
  HORIZONTAL_COORDINATE_REFERENCE_SYSTEMS,
  MONITORING_LOCATION_TYPES,
  REGION_IDS,
  RESULT_DETECTION_CONDITIONS,
  RESULT_DETECTION_QUANTITATION_LIMIT_TYPES,
  RESULT_STATUS_IDS,
  RESULT_VALUE_TYPES,
  VERTICAL_UNITS,
} from "../../lib/water/vocabulary.ts";

describe("vocabulary constants", () => {
  const sizes = [
    { name: "ACTIVITY_TYPES", values: ACTIVITY_TYPES, expected: 35 },
    { name: "ACTIVITY_GROUP_TYPES", values: ACTIVITY_GROUP_TYPES, expected: 7 },
    { name: "ACTIVITY_MEDIA_NAMES", values: ACTIVITY_MEDIA_NAMES, expected: 8 },
    { name: "MONITORING_LOCATION_TYPES", values: MONITORING_LOCATION_TYPES, expected: 24 },
    { name: "RESULT_VALUE_TYPES", values: RESULT_VALUE_TYPES, expected: 5 },
    { name: "RESULT_DETECTION_CONDITIONS", values: RESULT_DETECTION_CONDITIONS, expected: 6 },
    {
      name: "RESULT_DETECTION_QUANTITATION_LIMIT_TYPES",
      values: RESULT_DETECTION_QUANTITATION_LIMIT_TYPES,
      expected: 4,
    },
    { name: "RESULT_STATUS_IDS", values: RESULT_STATUS_IDS, expected: 6 },
    {
      name: "HORIZONTAL_COORDINATE_REFERENCE_SYSTEMS",
      values: HORIZONTAL_COORDINATE_REFERENCE_SYSTEMS,
      expected: 6,
    },
    { name: "ACTIVITY_DEPTH_HEIGHT_UNITS", values: ACTIVITY_DEPTH_HEIGHT_UNITS, expected: 3 },
    { name: "HORIZONTAL_ACCURACY_UNITS", values: HORIZONTAL_ACCURACY_UNITS, expected: 2 },
    { name: "VERTICAL_UNITS", values: VERTICAL_UNITS, expected: 3 },
    { name: "REGION_IDS", values: REGION_IDS, expected: 19 },
  ] as const;
  for (const c of sizes) {
    it(`${c.name} has ${c.expected} distinct values`, () => {
      assert.equal(c.values.length, c.expected);
      assert.equal(new Set<string>(c.values).size, c.expected);
    });
  }

  it("REGION_IDS has five hubs, the country and thirteen provinces and territories", () => {
    assert.equal(REGION_IDS.filter((id) => id.startsWith("hub.")).length, 5);
    assert.ok(REGION_IDS.includes("admin.2.ca"));
    assert.equal(REGION_IDS.filter((id) => id.startsWith("admin.4.ca.")).length, 13);
  });
});

describe("activityGroupTypeOf()", () => {
  it("maps every strict ActivityType to one of the 7 groups", () => {
    const groups = new Set<string>(ACTIVITY_GROUP_TYPES);
    for (const type of ACTIVITY_TYPES) {
      const group = activityGroupTypeOf(type);
      assert.ok(group !== null && groups.has(group), `${type} -> ${String(group)}`);
    }
  });

  const cases = [
    {
      name: "maps 'Sample-Routine' to 'Lab Sample'",
      input: "Sample-Routine",
      expected: "Lab Sample",
    },
    {
      name: "maps 'Field Msr/Obs' to 'Field Measure'",
      input: "Field Msr/Obs",
      expected: "Field Measure",
    },
    {
      name: "maps 'Field Msr/Obs-Continuous Time Series' to 'Continuous Data'",
      input: "Field Msr/Obs-Continuous Time Series",
      expected: "Continuous Data",
    },
    {
      name: "maps 'Field Msr/Obs-Portable Data Logger' to 'Field Measure'",
      input: "Field Msr/Obs-Portable Data Logger",
      expected: "Field Measure",
    },
    {
      name: "maps 'Sample-Positive Control' to 'Quality Control - Lab Sample'",
      input: "Sample-Positive Control",
      expected: "Quality Control - Lab Sample",
    },
    {
      name: "maps 'Quality Control Sample-Lab Duplicate' to 'Quality Control - Lab Sample'",
      input: "Quality Control Sample-Lab Duplicate",
      expected: "Quality Control - Lab Sample",
    },
    {
      name: "maps 'Quality Control Field Replicate Msr/Obs' to 'Quality Control - Field Measure'",
      input: "Quality Control Field Replicate Msr/Obs",
      expected: "Quality Control - Field Measure",
    },
    { name: "maps 'Unspecified' to 'Unspecified'", input: "Unspecified", expected: "Unspecified" },
  ] as const;
  for (const c of cases) it(c.name, () => assert.equal(activityGroupTypeOf(c.input), c.expected));

  const legacy = [
    {
      name: "maps legacy 'Field Msr/Obs-Habitat Assessment' to 'Field Measure' by prefix",
      input: "Field Msr/Obs-Habitat Assessment",
      expected: "Field Measure",
    },
    {
      name: "maps legacy 'Sample-Routine Resample' to 'Lab Sample' by prefix",
      input: "Sample-Routine Resample",
      expected: "Lab Sample",
    },
    {
      name: "maps legacy 'Quality Control Sample-Lab Spike Duplicate' to a lab QC group",
      input: "Quality Control Sample-Lab Spike Duplicate",
      expected: "Quality Control - Lab Sample",
    },
    {
      name: "maps legacy 'Quality Control Field Calibration Check' to a field QC group",
      input: "Quality Control Field Calibration Check",
      expected: "Quality Control - Field Measure",
    },
    { name: "maps an unknown value to 'Other'", input: "Habitat survey", expected: "Other" },
  ] as const;
  for (const c of legacy) it(c.name, () => assert.equal(activityGroupTypeOf(c.input), c.expected));

  it("returns null for an empty string", () => {
    assert.equal(activityGroupTypeOf(""), null);
  });
});

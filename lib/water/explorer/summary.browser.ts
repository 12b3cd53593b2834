// The explorer's summaries from the API's `$apply`: the requests, a mean's
// colour on the map, the summary table and its CSV.

import { buildFilter, displayUnit, type Selection } from "./query.browser.ts";

/** Each summary: count, mean, range and units (a mean over several means nothing). */
const AGGREGATES =
  "aggregate($count as Count, ResultValue with average as Mean, ResultValue with min as Low, ResultValue with max as High, ResultUnit with countdistinct as Units, ResultUnit with min as Unit)";

/** The `filter(...)/` of the selection's readings with a value. */
function applyFilter(selection: Selection, locationId?: number): string {
  const filter = buildFilter(selection, locationId);
  return `filter(${filter === "" ? "" : `${filter} and `}ResultValue ne null)/`;
}

/**
 * The `$apply` of a summary per dataset and location.
 * @param selection what the user picked
 */
export function summaryApply(selection: Selection): string {
  return `${applyFilter(selection)}groupby((DOI,LocationId), ${AGGREGATES})`;
}

/**
 * The `$apply` of a summary per dataset.
 * @param selection what the user picked
 */
export function datasetSummaryApply(selection: Selection): string {
  return `${applyFilter(selection)}groupby((DOI), ${AGGREGATES})`;
}

/** A trend's period: a mean a year, or a month. */
export type TrendPeriod = "year" | "month";

/**
 * The `$apply` of a trend, a mean a year or a month (of one location's, when given).
 * @param selection what the user picked
 * @param locationId one location's id
 * @param period a year or a month
 */
export function trendApply(
  selection: Selection,
  locationId?: number,
  period: TrendPeriod = "year",
): string {
  const month = period === "month" ? ", month(ActivityStartDate) as Month" : "";
  return `${
    applyFilter(selection, locationId)
  }compute(year(ActivityStartDate) as Year${month})/groupby((Year${
    month === "" ? "" : ",Month"
  }), ${AGGREGATES})`;
}

/** What a summary's aggregates answer for a group. */
export interface Aggregates {
  readonly Count: number;
  readonly Mean: number | null;
  readonly Low: number | null;
  readonly High: number | null;
  /** How many units the readings have (0 when none has one). */
  readonly Units: number;
  /** Their unit, when they have one (the first of several). */
  readonly Unit: string | null;
}

/**
 * The unit of the most readings among groups of one unit; undefined for none.
 * @param rows the groups
 */
export function mainUnit(rows: readonly Aggregates[]): string | null | undefined {
  const counts = new Map<string | null, number>();
  for (const row of rows) {
    if (row.Units <= 1) counts.set(row.Unit, (counts.get(row.Unit) ?? 0) + row.Count);
  }
  let main: string | null | undefined, most = 0;
  for (const [unit, count] of counts) if (count > most) [main, most] = [unit, count];
  return main;
}

/**
 * Whether a group's readings are all in the given unit.
 * @param row the group
 * @param unit the unit, e.g. of {@linkcode mainUnit}
 */
export function inUnit(row: Aggregates, unit: string | null | undefined): boolean {
  return row.Units <= 1 && row.Unit === unit;
}

/** A group's unit as shown: `mg/L`, none for `None`, `3 units` for several. */
export function unitText(row: Aggregates): string {
  return row.Units > 1 ? `${row.Units} units` : displayUnit(row.Unit);
}

/** A row of {@linkcode datasetSummaryApply}'s answer. */
export interface DatasetSummaryRow extends Aggregates {
  readonly DOI: string | null;
}

/** A row of {@linkcode summaryApply}'s answer. */
export interface SummaryRow extends DatasetSummaryRow {
  readonly LocationId: number;
}

/** A row of {@linkcode trendApply}'s answer. */
export interface TrendRow extends Aggregates {
  readonly Year: number | null;
  /** Its month, 1 to 12, in a monthly trend. */
  readonly Month?: number | null;
}

/** The map's colours, lowest mean to highest (viridis: colour-blind safe). */
export const PALETTE: readonly string[] = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"];

/**
 * A mean's colour, `#rrggbb`, interpolated in the palette; the middle one when all are equal.
 * @param value the mean
 * @param low the lowest mean shown
 * @param high the highest
 */
export function meanColour(value: number, low: number, high: number): string {
  const share = high > low ? Math.min(1, Math.max(0, (value - low) / (high - low))) : 0.5;
  const at = share * (PALETTE.length - 1);
  const index = Math.min(PALETTE.length - 2, Math.floor(at));
  const [from, to] = [PALETTE[index]!, PALETTE[index + 1]!].map((hex) =>
    [1, 3, 5].map((start) => parseInt(hex.slice(start, start + 2), 16))
  );
  const t = at - index;
  return `#${
    from!.map((channel, i) =>
      Math.round(channel + (to![i]! - channel) * t).toString(16).padStart(2, "0")
    )
      .join("")
  }`;
}

/**
 * A number as the summaries write it: a whole number as it is, any other to
 * six significant digits; no thousands separators, so that a CSV reads it back.
 * @param value the number, or null for none
 */
export function summaryNumber(value: number | null): string {
  if (value === null) return "";
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
}

/**
 * A location's tooltip: its mean, count and range, with their unit (no mean for several).
 * @param name the location's name
 * @param id its id
 * @param row its summary
 */
export function summaryTitle(name: string, id: number, row: Aggregates): string {
  const readings = `${row.Count} ${row.Count === 1 ? "reading" : "readings"}`;
  if (row.Units > 1) return `${name} (location ${id}): ${readings} in ${row.Units} units`;
  const unit = displayUnit(row.Unit) === "" ? "" : ` ${displayUnit(row.Unit)}`;
  return `${name} (location ${id}): mean ${summaryNumber(row.Mean)}${unit}, ${readings}, range ${
    summaryNumber(row.Low)
  }–${summaryNumber(row.High)}${unit}`;
}

/** A row of the summary table: a dataset's (no `LocationId`), or a location's of a dataset, named. */
export interface SummaryTableRow extends DatasetSummaryRow {
  readonly LocationId: number | null;
  readonly dataset: string;
  readonly location: string;
}

/** The location of a dataset's own row of the summary table. */
export const ALL_LOCATIONS = "All locations";

/**
 * The summary table's rows: each dataset's (by name), then its locations' (by name, then id).
 * @param datasets the rows of {@linkcode datasetSummaryApply}
 * @param places the rows of {@linkcode summaryApply}
 * @param datasetName a dataset's name, by DOI
 * @param locationName a location's name, by id
 */
export function summaryTable(
  datasets: readonly DatasetSummaryRow[],
  places: readonly SummaryRow[],
  datasetName: (doi: string) => string,
  locationName: (id: number) => string,
): SummaryTableRow[] {
  const named = (doi: string | null): string => doi === null ? "" : datasetName(doi);
  const own: SummaryTableRow[] = datasets.map((row) => ({
    ...row,
    LocationId: null,
    dataset: named(row.DOI),
    location: ALL_LOCATIONS,
  }));
  const located: SummaryTableRow[] = places.map((row) => ({
    ...row,
    dataset: named(row.DOI),
    location: locationName(row.LocationId),
  }));
  return [...own, ...located].sort((a, b) =>
    a.dataset.localeCompare(b.dataset) || (a.DOI ?? "").localeCompare(b.DOI ?? "") ||
    Number(a.LocationId !== null) - Number(b.LocationId !== null) ||
    a.location.localeCompare(b.location) || (a.LocationId ?? 0) - (b.LocationId ?? 0)
  );
}

/** The summary's CSV header. */
export const SUMMARY_HEADER = "DOI,Dataset,LocationId,Location,Count,Unit,Mean,Min,Max";

/** A row's fields, as {@linkcode SUMMARY_HEADER} names them (no mean or range for several units). */
function fields(row: SummaryTableRow): string[] {
  return [
    row.DOI ?? "",
    row.dataset,
    row.LocationId === null ? "" : String(row.LocationId),
    row.location,
    String(row.Count),
    unitText(row),
    ...[row.Mean, row.Low, row.High].map((value) => row.Units > 1 ? "" : summaryNumber(value)),
  ];
}

function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * The summary table as CSV (RFC 4180: CRLF line ends, fields with a comma,
 * quote or line end quoted), its header {@linkcode SUMMARY_HEADER}.
 * @param rows the table's rows
 */
export function summaryCsv(rows: readonly SummaryTableRow[]): string {
  return [SUMMARY_HEADER, ...rows.map((row) => fields(row).map(csvField).join(",")), ""].join(
    "\r\n",
  );
}

/**
 * Fills the summary table's body: a row per dataset (`tr.dataset`, its DOI
 * in `data-dataset`), then per location of it (its id in `data-location`).
 * @param body the table's body
 * @param rows its rows
 */
export function drawSummaryTable(
  body: HTMLTableSectionElement,
  rows: readonly SummaryTableRow[],
): void {
  body.replaceChildren(...rows.map((row) => {
    const tr = document.createElement("tr");
    if (row.LocationId === null) {
      tr.className = "dataset";
      tr.dataset["dataset"] = row.DOI ?? "";
    } else {
      tr.dataset["location"] = String(row.LocationId);
    }
    const [, dataset, id, location, ...rest] = fields(row);
    [dataset!, id === "" ? location! : `${location} (${id})`, ...rest].forEach((text, index) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (index >= 2 && index !== 3) td.className = "number";
      tr.append(td);
    });
    return tr;
  }));
}

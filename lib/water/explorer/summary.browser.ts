// The water-data explorer's summaries, computed by the API's `$apply`: the
// `$apply` of a selection's per-location summary and of its yearly trend, the
// colour of a mean on the map, and the summary table with its CSV. Pure
// functions but the table's drawing (the browser test calls them).

import { buildFilter, type Selection } from "./query.browser.ts";

/** What each summary aggregates: the readings with a value, their mean, lowest and highest. */
const AGGREGATES =
  "aggregate($count as Count, ResultValue with average as Mean, ResultValue with min as Low, ResultValue with max as High)";

/** The `filter(...)/` step of a summary's `$apply`: the selection's rows that have a value. */
function applyFilter(selection: Selection, locationId?: number): string {
  const filter = buildFilter(selection, locationId);
  return `filter(${filter === "" ? "" : `${filter} and `}ResultValue ne null)/`;
}

/**
 * The `$apply` of a selection's summary per dataset and location: one row
 * per `(DOI, LocationId)` with `Count`, `Mean`, `Low` and `High` of the
 * readings with a value.
 * @param selection what the user picked
 */
export function summaryApply(selection: Selection): string {
  return `${applyFilter(selection)}groupby((DOI,LocationId), ${AGGREGATES})`;
}

/**
 * The `$apply` of a selection's summary per dataset: one row per `DOI`, its
 * aggregates those of {@linkcode summaryApply}.
 * @param selection what the user picked
 */
export function datasetSummaryApply(selection: Selection): string {
  return `${applyFilter(selection)}groupby((DOI), ${AGGREGATES})`;
}

/**
 * The `$apply` of a selection's yearly trend (of one location's, when given):
 * one row per `Year` of `ActivityStartDate` with `Count`, `Mean`, `Low` and `High`.
 * @param selection what the user picked
 * @param locationId one location's id
 */
export function trendApply(selection: Selection, locationId?: number): string {
  return `${
    applyFilter(selection, locationId)
  }compute(year(ActivityStartDate) as Year)/groupby((Year), ${AGGREGATES})`;
}

/** What a summary's aggregates answer for a group. */
export interface Aggregates {
  readonly Count: number;
  readonly Mean: number | null;
  readonly Low: number | null;
  readonly High: number | null;
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
}

/** The map's colours for a mean, from the lowest mean shown to the highest (viridis, which reads in grey and for colour-blind eyes). */
export const PALETTE: readonly string[] = ["#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"];

/**
 * A mean's colour between the lowest and highest means shown: the palette's
 * colours interpolated, `#rrggbb`; the middle colour when all are equal.
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
 * A location's tooltip on the map: its name and id, the mean, the count and
 * the range of its readings.
 * @param name the location's name
 * @param id its id
 * @param row its summary
 */
export function summaryTitle(name: string, id: number, row: Aggregates): string {
  return `${name} (location ${id}): mean ${summaryNumber(row.Mean)}, ${row.Count} ${
    row.Count === 1 ? "reading" : "readings"
  }, range ${summaryNumber(row.Low)}–${summaryNumber(row.High)}`;
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
 * The summary table's rows: each dataset's (by name), then its locations' (by
 * name, then id); a location whose dataset has no row of its own still listed.
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
  // A dataset's row first, then its locations: the dataset's own row sorts as if before any id.
  return [...own, ...located].sort((a, b) =>
    a.dataset.localeCompare(b.dataset) || (a.DOI ?? "").localeCompare(b.DOI ?? "") ||
    Number(a.LocationId !== null) - Number(b.LocationId !== null) ||
    a.location.localeCompare(b.location) || (a.LocationId ?? 0) - (b.LocationId ?? 0)
  );
}

/** The summary table's columns, as its CSV names them. */
export const SUMMARY_COLUMNS = [
  "DOI",
  "Dataset",
  "LocationId",
  "Location",
  "Count",
  "Mean",
  "Min",
  "Max",
] as const;

function csvField(text: string): string {
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * The summary table as CSV (RFC 4180: CRLF line ends, fields with a comma,
 * quote or line end quoted), its header {@linkcode SUMMARY_COLUMNS}.
 * @param rows the table's rows
 */
export function summaryCsv(rows: readonly SummaryTableRow[]): string {
  const lines = [SUMMARY_COLUMNS.join(",")];
  for (const row of rows) {
    lines.push(
      [
        row.DOI ?? "",
        row.dataset,
        row.LocationId === null ? "" : String(row.LocationId),
        row.location,
        String(row.Count),
        summaryNumber(row.Mean),
        summaryNumber(row.Low),
        summaryNumber(row.High),
      ].map(csvField).join(","),
    );
  }
  return `${lines.join("\r\n")}\r\n`;
}

/**
 * Fills the summary table's body: a row per dataset (`tr.dataset`, with its
 * DOI in `data-dataset`), then per location of it (its id in
 * `data-location`), the numbers in their own right-aligned cells.
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
    const cells = [
      row.dataset,
      row.LocationId === null ? row.location : `${row.location} (${row.LocationId})`,
      String(row.Count),
      summaryNumber(row.Mean),
      summaryNumber(row.Low),
      summaryNumber(row.High),
    ];
    cells.forEach((text, index) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (index >= 2) td.className = "number";
      tr.append(td);
    });
    return tr;
  }));
}

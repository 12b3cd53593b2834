// One cohesive structure, over 600 lines on purpose: the explorer's page
// module, whose functions share the page's state (its elements, the key, the
// selection shown and the requests that can cancel it, the drawings' widths).
// The water-data explorer: the page's module, which wires the others to the
// page. It asks only the public API of the server that served it, with the
// key the user gives (kept in sessionStorage), through the pages' shared API
// client: one request at a time, paced by the key's rate limit as the API's
// RateLimit headers tell it (and waiting out a 429 as Retry-After says).
// Its parts are modules of their own, served beside it: the query (filters,
// URLs, rows), the map, the plot, the table, the summaries (`$apply`) and
// their drawing helpers.

import { ApiError, createApiClient } from "../../web/browser/api_client.browser.ts";
import type { Drawing } from "./drawing.browser.ts";
import {
  type BasemapLayer,
  drawMap,
  fetchBasemap,
  type MapPlace,
  markChosen,
} from "./map.browser.ts";
import {
  clearSeries,
  drawSeries,
  readingTime,
  type Series,
  type SeriesPoint,
} from "./plot.browser.ts";
import {
  buildFilter,
  collectionPath,
  coordinates,
  curlCommand,
  type Dataset,
  displayUnit,
  followLink,
  type LocationRow,
  type ObservationRow,
  type Page,
  type QueryParams,
  type Selection,
} from "./query.browser.ts";
import {
  datasetSummaryApply,
  type DatasetSummaryRow,
  drawSummaryTable,
  inUnit,
  mainUnit,
  meanColour,
  summaryApply,
  summaryCsv,
  summaryNumber,
  type SummaryRow,
  summaryTable,
  summaryTitle,
  trendApply,
  type TrendPeriod,
  type TrendRow,
} from "./summary.browser.ts";
import { formatNumber as format, ObservationTable } from "./table.browser.ts";

const KEY_STORAGE = "tributary.explorer.key";
const RATE_STORAGE = "tributary.explorer.rate";
const PAGE_SIZE = 25;
const LOCATIONS_PER_REQUEST = 5000;
const SERIES_PER_REQUEST = 10_000;
/** Pages followed at most for the map and for a series, so that a huge selection stays bounded. */
const MAX_PAGES = 20;
const SUGGESTION_SAMPLE = 10_000;
const OBSERVATION_FIELDS =
  "Id,LocationId,ActivityStartDate,ActivityStartTime,CharacteristicName,ResultValue,ResultUnit";

function byId<T extends Element>(id: string, type: abstract new () => T): T {
  const found = document.getElementById(id);
  if (!(found instanceof type)) throw new TypeError(`Cannot find #${id}`);
  return found;
}

function meta(name: string): string {
  return document.querySelector<HTMLMetaElement>(`meta[name="${name}"]`)?.content ?? "";
}

const ui = {
  keyForm: byId("key-form", HTMLFormElement),
  key: byId("api-key", HTMLInputElement),
  forget: byId("forget-key", HTMLButtonElement),
  filters: byId("filters", HTMLFormElement),
  dataset: byId("dataset", HTMLSelectElement),
  region: byId("region", HTMLSelectElement),
  characteristic: byId("characteristic", HTMLInputElement),
  suggestions: byId("characteristics", HTMLDataListElement),
  from: byId("from", HTMLInputElement),
  to: byId("to", HTMLInputElement),
  status: byId("status", HTMLElement),
  count: byId("count", HTMLOutputElement),
  locationCount: byId("location-count", HTMLOutputElement),
  map: byId("map", SVGSVGElement),
  mapDescription: byId("map-description", SVGDescElement),
  mapNote: byId("map-note", HTMLElement),
  seriesLocation: byId("series-location", HTMLSelectElement),
  series: byId("series", SVGSVGElement),
  seriesDescription: byId("series-description", SVGDescElement),
  seriesNote: byId("series-note", HTMLElement),
  mapLegend: byId("map-legend", HTMLElement),
  legendWhat: byId("legend-what", HTMLElement),
  legendLow: byId("legend-low", HTMLOutputElement),
  legendHigh: byId("legend-high", HTMLOutputElement),
  trendNote: byId("trend-note", HTMLElement),
  locationTrendNote: byId("location-trend-note", HTMLElement),
  summaryNote: byId("summary-note", HTMLElement),
  summaryRows: byId("summary-rows", HTMLTableSectionElement),
  summaryCsv: byId("summary-csv", HTMLAnchorElement),
  applyUrl: byId("apply-url", HTMLElement),
  applyCurl: byId("apply-curl", HTMLElement),
  trendUrl: byId("trend-url", HTMLElement),
  period: byId("trend-period", HTMLSelectElement),
  rows: byId("observation-rows", HTMLTableSectionElement),
  previous: byId("previous", HTMLButtonElement),
  next: byId("next", HTMLButtonElement),
  pageInfo: byId("page-info", HTMLElement),
  apiUrl: byId("api-url", HTMLElement),
  apiCurl: byId("api-curl", HTMLElement),
  csvCurl: byId("csv-curl", HTMLElement),
  copyUrl: byId("copy-url", HTMLButtonElement),
  copyCurl: byId("copy-curl", HTMLButtonElement),
  download: byId("download", HTMLButtonElement),
  citations: byId("citations", HTMLElement),
  attribution: byId("attribution", HTMLElement),
};

/** The summaries' notes as the page first gives them, to give again with nothing to show. */
const hints = {
  summary: ui.summaryNote.textContent ?? "",
  trend: ui.trendNote.textContent ?? "",
  locationTrend: ui.locationTrendNote.textContent ?? "",
};
const apiBase = meta("explorer:api");
const tileTemplate = meta("explorer:tiles");
const map: Drawing = { svg: ui.map, description: ui.mapDescription };
const plot: Drawing = { svg: ui.series, description: ui.seriesDescription };
const [trendPlot, locationTrendPlot] = ["trend", "location-trend"].map((id): Drawing => ({
  svg: byId(id, SVGSVGElement),
  description: byId(`${id}-description`, SVGDescElement),
})) as [Drawing, Drawing];

let key = sessionStorage.getItem(KEY_STORAGE) ?? "";
let datasets: Dataset[] = [];
let locations = new Map<number, LocationRow>();
/** The selection shown, its filter, and what cancels its requests. */
let shown: { selection: Selection; filter: string; controller: AbortController } | undefined;
let seriesController: AbortController | undefined;
let suggestionsFor: string | undefined;
let rendered = false;
/** Whether the map shows a selection's locations (and not yet the view before one). */
let located = false;
/** The basemap's layers, once loaded. */
let basemap: BasemapLayer[] = [];
/** The series on the plot, to draw again at another width. */
let plotted: Series | undefined;
/** The summary per location shown. */
let summaries = new Map<number, SummaryRow>();
/** What each trend shows, to ask for again at another period. */
interface TrendAsk {
  readonly selection: Selection;
  readonly locationId: number | undefined;
  readonly title: string;
  readonly note: HTMLElement;
  readonly signal: AbortSignal;
}
/** The trends asked for, and those whose answer is awaited. */
const trendAsks = new Map<Drawing, TrendAsk>();
const trendsAsking = new Map<Drawing, TrendAsk>();
/** The trends drawn, to draw again at another width. */
const trends = new Map<Drawing, Series>();
/** The unit the map shows means in: that of the most readings. */
let colourUnit: string | null | undefined;
/** The object URL of the summary's CSV, revoked when another takes its place. */
let summaryCsvUrl: string | undefined;
/** The width each drawing was last drawn at. */
const drawnWidths = new Map<SVGSVGElement, number>();

// --- Requests ------------------------------------------------------------------

/** The API, asked with the key one request at a time, paced by the key's limit. */
const api = createApiClient({
  credentials: () => ({ "x-api-key": key }),
  pace: RATE_STORAGE,
  onRetry: (delay, status) =>
    say(
      `Waiting ${delay / 1000} s: ${status === 429 ? "the API's rate limit" : "the API is busy"}…`,
    ),
});

function getJson<T>(path: string, signal: AbortSignal): Promise<T> {
  return api.request<T>(path, { signal });
}

/** Every row of a collection query, following next links up to {@linkcode MAX_PAGES} pages. */
async function getAll<T>(
  path: string,
  signal: AbortSignal,
): Promise<{ rows: T[]; complete: boolean }> {
  const rows: T[] = [];
  let next: string | undefined = path;
  for (let pages = 0; next !== undefined && pages < MAX_PAGES; pages++) {
    const page: Page<T> = await getJson<Page<T>>(next, signal);
    rows.push(...page.value);
    next = followLink(page["@odata.nextLink"], location.origin);
  }
  return { rows, complete: next === undefined };
}

const table = new ObservationTable(
  { rows: ui.rows, previous: ui.previous, next: ui.next, info: ui.pageInfo },
  {
    read: (path, signal) => getJson<Page<ObservationRow>>(path, signal),
    locationName: (id) => locations.get(id)?.Name ?? String(id),
    pageSize: PAGE_SIZE,
  },
);

// --- Selection -------------------------------------------------------------------

function readSelection(): Selection {
  return {
    dataset: ui.dataset.value,
    region: ui.region.value,
    characteristic: ui.characteristic.value.trim(),
    from: ui.from.value,
    to: ui.to.value,
  };
}

/** The selection in the address (`#region=...&characteristic=...`), so that a view can be shared. */
function writeHash(selection: Selection): void {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(selection)) if (value !== "") params.set(name, value);
  const hash = params.toString();
  history.replaceState(null, "", hash === "" ? location.pathname : `#${hash}`);
}

function readHash(): void {
  const params = new URLSearchParams(location.hash.slice(1));
  ui.region.value = params.get("region") ?? "";
  ui.characteristic.value = params.get("characteristic") ?? "";
  ui.from.value = params.get("from") ?? "";
  ui.to.value = params.get("to") ?? "";
}

function say(message: string): void {
  ui.status.textContent = message;
}

function failed(error: unknown): void {
  if (error instanceof DOMException && error.name === "AbortError") return;
  if (error instanceof ApiError && (error.status === 401 || error.status === 403)) {
    // A refused key is forgotten, so that the next visit asks for another.
    sessionStorage.removeItem(KEY_STORAGE);
    key = "";
    ui.forget.hidden = true;
    ui.key.placeholder = "";
    say(`The API refused the key (${error.status}): ${error.message}`);
    ui.key.focus();
    return;
  }
  say(`Cannot load the data: ${error instanceof Error ? error.message : String(error)}`);
}

// --- Start ------------------------------------------------------------------------

async function start(): Promise<void> {
  ui.forget.hidden = key === "";
  if (key === "") {
    say("Enter your API key to start.");
    return;
  }
  ui.key.value = "";
  ui.key.placeholder = "a key is in use";
  say("Loading the datasets…");
  const controller = new AbortController();
  try {
    const { rows } = await getAll<Dataset>(
      collectionPath(apiBase, "Metadata", [[
        "$select",
        "DOI,DatasetName,Citation,Licence,TemporalExtent",
      ], ["$top", "1000"]]),
      controller.signal,
    );
    datasets = rows.sort((a, b) => a.DatasetName.localeCompare(b.DatasetName));
  } catch (error) {
    failed(error);
    return;
  }
  const wanted = new URLSearchParams(location.hash.slice(1)).get("dataset") ?? ui.dataset.value;
  ui.dataset.replaceChildren(
    new Option("All datasets", ""),
    ...datasets.map((dataset) => new Option(dataset.DatasetName, dataset.DOI)),
  );
  ui.dataset.value = datasets.some((dataset) => dataset.DOI === wanted) ? wanted : "";
  datesOfDataset();
  await show(readSelection());
}

function datesOfDataset(): void {
  const extent = datasets.find((dataset) => dataset.DOI === ui.dataset.value)?.TemporalExtent;
  for (const input of [ui.from, ui.to]) {
    input.min = extent?.[0] ?? "";
    input.max = extent?.[1] ?? "";
  }
}

/** Shows a selection: the API's URLs and the citations at once, then the map, the count, the first page and the series. */
async function show(selection: Selection): Promise<void> {
  shown?.controller.abort();
  seriesController?.abort();
  const controller = new AbortController();
  const filter = buildFilter(selection);
  shown = { selection, filter, controller };
  delete document.body.dataset["shown"];
  delete document.body.dataset["summarised"];
  summaries = new Map();
  clearSummary(
    selection.characteristic === "" ? hints.summary : `Summarising ${selection.characteristic}…`,
  );
  writeHash(selection);
  showApi(filter);
  showCitations(selection.dataset);
  say("Loading…");
  ui.count.value = "…";
  ui.locationCount.value = "…";
  try {
    const found = await getAll<LocationRow>(
      collectionPath(apiBase, "Locations", [
        ["$filter", filter],
        ["$select", "Id,Name,DOI,Latitude,Longitude,LatitudeNormalized,LongitudeNormalized"],
        ["$top", String(LOCATIONS_PER_REQUEST)],
      ]),
      controller.signal,
    );
    locations = new Map(found.rows.map((row) => [row.Id, row]));
    located = true;
    ui.locationCount.value = `${found.complete ? "" : "more than "}${format(found.rows.length)}`;
    showMap();
    listLocations();
    const counted = await getJson<{ "@odata.count": number }>(
      collectionPath(apiBase, "Observations", [["$filter", filter], ["$count", "true"]]),
      controller.signal,
    );
    const total = counted["@odata.count"];
    ui.count.value = format(total);
    await table.first(
      collectionPath(apiBase, "Observations", [
        ["$filter", filter],
        ["$select", OBSERVATION_FIELDS],
        ["$top", String(PAGE_SIZE)],
      ]),
      total,
      controller.signal,
    );
    say(`${format(total)} observations at ${format(locations.size)} locations.`);
    // What is on the page now, for people (the status) and for the browser test (the filter).
    document.body.dataset["shown"] = filter;
    if (!rendered) {
      rendered = true;
      performance.mark("explorer:first-render");
    }
    try {
      await summarise(selection, controller.signal);
    } catch (error) {
      // A summary refused: none at all, and why; the rest of the page as ever.
      if (
        (error instanceof DOMException && error.name === "AbortError") ||
        (error instanceof ApiError && (error.status === 401 || error.status === 403))
      ) throw error;
      summaries = new Map();
      showMap();
      clearSummary(
        `Cannot summarise ${selection.characteristic}: ${
          error instanceof Error ? error.message : String(error)
        }`,
      );
    }
    document.body.dataset["summarised"] = filter;
    await plotSeries();
  } catch (error) {
    failed(error);
  }
}

// --- The API box and the citations ------------------------------------------------

/** The path of an `$apply` of the observations. */
function applyPath(apply: string): string {
  return collectionPath(apiBase, "Observations", [["$apply", apply]]);
}

function showApi(filter: string): void {
  const url = `${location.origin}${
    collectionPath(apiBase, "Observations", [["$filter", filter], ["$select", OBSERVATION_FIELDS], [
      "$top",
      String(PAGE_SIZE),
    ]])
  }`;
  ui.apiUrl.textContent = url;
  ui.apiCurl.textContent = curlCommand(url, key);
  ui.csvCurl.textContent = `${
    curlCommand(`${location.origin}${csvPath(filter)}`, key)
  } > records.csv`;
  const selection = shown?.selection;
  if (selection === undefined || selection.characteristic === "") {
    ui.applyUrl.textContent = "Pick a characteristic: its summary's URL shows here.";
    ui.applyCurl.textContent = "";
    ui.trendUrl.textContent = "";
    return;
  }
  const summaryUrl = `${location.origin}${applyPath(summaryApply(selection))}`;
  ui.applyUrl.textContent = summaryUrl;
  ui.applyCurl.textContent = curlCommand(summaryUrl, key);
  showTrendUrl(selection);
}

function showTrendUrl(selection: Selection): void {
  ui.trendUrl.textContent = `${location.origin}${
    applyPath(trendApply(selection, undefined, period()))
  }`;
}

/** The trends' period chosen. */
function period(): TrendPeriod {
  return ui.period.value === "month" ? "month" : "year";
}

function csvPath(filter: string): string {
  const params: QueryParams = [["$filter", filter], ["$format", "csv"]];
  return collectionPath(apiBase, "Records", params);
}

function showCitations(doi: string): void {
  const chosen = doi === "" ? datasets : datasets.filter((dataset) => dataset.DOI === doi);
  ui.citations.replaceChildren(...chosen.map((dataset) => {
    const article = document.createElement("article");
    article.className = "citation";
    const heading = document.createElement("h3");
    heading.textContent = dataset.DatasetName;
    article.append(heading);
    if (dataset.Citation !== null && dataset.Citation !== "") {
      article.append(paragraph(dataset.Citation));
    }
    const doiLink = `https://doi.org/${dataset.DOI}`;
    article.append(paragraph("DOI: ", link(doiLink, doiLink)));
    if (dataset.Licence !== null && dataset.Licence !== "") {
      const licence = /^https?:\/\//.test(dataset.Licence)
        ? link(dataset.Licence, dataset.Licence)
        : dataset.Licence;
      article.append(paragraph("Licence: ", licence));
    }
    return article;
  }));
}

function paragraph(...parts: (string | Node)[]): HTMLParagraphElement {
  const p = document.createElement("p");
  p.append(...parts);
  return p;
}

function link(href: string, text: string): HTMLAnchorElement {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  a.rel = "noopener noreferrer";
  return a;
}

// --- The map -------------------------------------------------------------------------

/** Reads the basemap once, beside the API's requests (it is a file of the page, not the API's); the map is drawn again with it. */
async function loadBasemap(): Promise<void> {
  const path = meta("explorer:basemap");
  if (path === "") return;
  try {
    basemap = await fetchBasemap(path);
    // Drawn now only over the view it will keep: a selection's, or Canada's when no key will bring one.
    if (located || key === "") showMap();
  } catch (error) {
    ui.mapNote.textContent = `The map's land and water did not load (${
      error instanceof Error ? error.message : String(error)
    }): the locations are drawn on the graticule alone.`;
  }
}

function showMap(): void {
  const meanRange = rangeOfMeans();
  const places: MapPlace[] = [];
  for (const row of locations.values()) {
    const at = coordinates(row);
    if (at === undefined) continue;
    const summary = summaries.get(row.Id);
    const mean = summary !== undefined && inUnit(summary, colourUnit) ? summary.Mean : null;
    places.push({
      id: row.Id,
      name: row.Name,
      ...at,
      ...(mean === null ? {} : {
        fill: meanColour(mean, meanRange.low, meanRange.high),
        title: summaryTitle(row.Name, row.Id, summary!),
      }),
    });
  }
  const selected = ui.seriesLocation.value === "" ? undefined : Number(ui.seriesLocation.value);
  // Tiles only for a selection's view: the view before one (Canada) would ask a tile server for tiles shown a moment.
  const tiles = located ? tileTemplate : "";
  drawnWidths.set(
    ui.map,
    drawMap(map, { places, unplaced: locations.size - places.length, basemap, tiles, selected }),
  );
}

function listLocations(): void {
  const keep = ui.seriesLocation.value;
  const rows = [...locations.values()].sort((a, b) => a.Name.localeCompare(b.Name) || a.Id - b.Id);
  ui.seriesLocation.replaceChildren(
    new Option("Choose a location", ""),
    ...rows.map((row) => new Option(`${row.Name} (${row.Id})`, String(row.Id))),
  );
  ui.seriesLocation.value = locations.has(Number(keep)) ? keep : "";
}

function chooseLocation(id: number): void {
  ui.seriesLocation.value = String(id);
  markChosen(map, id);
  void plotSeries();
}

// --- The table -----------------------------------------------------------------------

/** Turns the table to the next page or the one before, for the selection shown. */
async function turnPage(forward: boolean): Promise<void> {
  if (shown === undefined) return;
  try {
    await table.turn(forward, shown.controller.signal);
  } catch (error) {
    failed(error);
  }
}

// --- The series ------------------------------------------------------------------------

async function plotSeries(): Promise<void> {
  seriesController?.abort();
  const id = Number(ui.seriesLocation.value);
  const selection = shown?.selection;
  const place = locations.get(id);
  if (selection === undefined || ui.seriesLocation.value === "" || place === undefined) {
    noSeries("Pick a characteristic and a location to plot its readings over time.");
    return;
  }
  if (selection.characteristic === "") {
    noSeries("Pick a characteristic (and press Show) to plot this location's readings over time.");
    return;
  }
  const controller = new AbortController();
  seriesController = controller;
  ui.seriesNote.textContent = `Loading the ${selection.characteristic} readings of ${place.Name}…`;
  try {
    const { rows, complete } = await getAll<ObservationRow>(
      collectionPath(apiBase, "Observations", [
        ["$filter", buildFilter(selection, id)],
        ["$select", "Id,ActivityStartDate,ActivityStartTime,ResultValue,ResultUnit"],
        ["$top", String(SERIES_PER_REQUEST)],
      ]),
      controller.signal,
    );
    const points: SeriesPoint[] = [];
    const units = new Set<string>();
    for (const row of rows) {
      const time = readingTime(row.ActivityStartDate, row.ActivityStartTime);
      if (time === undefined || typeof row.ResultValue !== "number") continue;
      points.push({ time, value: row.ResultValue });
      const unit = displayUnit(row.ResultUnit);
      if (unit !== "") units.add(unit);
    }
    showSeries({
      points,
      units: [...units],
      title: `${selection.characteristic} at ${place.Name}`,
    });
    const left = rows.length - points.length;
    ui.seriesNote.textContent =
      `${format(points.length)} readings of ${selection.characteristic} at ${place.Name}` +
      (units.size === 0 ? "" : ` (${[...units].join(", ")})`) +
      (left > 0 ? `; ${format(left)} without a value are left out` : "") +
      (complete ? "." : "; only the first ones are drawn.");
    await drawTrend(locationTrendPlot, {
      selection,
      locationId: id,
      title: `${selection.characteristic} at ${place.Name}`,
      note: ui.locationTrendNote,
      signal: controller.signal,
    });
  } catch (error) {
    if (!(error instanceof DOMException && error.name === "AbortError")) {
      noSeries(`Cannot load the series: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
}

function noSeries(note: string): void {
  plotted = undefined;
  clearSeries(plot);
  ui.seriesNote.textContent = note;
  clearTrend(
    locationTrendPlot,
    ui.locationTrendNote,
    hints.locationTrend,
  );
}

function showSeries(series: Series): void {
  plotted = series;
  drawnWidths.set(ui.series, drawSeries(plot, series));
}

// --- The summaries ($apply) ---------------------------------------------------------

/** The lowest and highest mean of the locations summarised. */
function rangeOfMeans(): { low: number; high: number } {
  let low = Infinity, high = -Infinity;
  for (const row of summaries.values()) {
    if (row.Mean === null || !inUnit(row, colourUnit)) continue;
    low = Math.min(low, row.Mean);
    high = Math.max(high, row.Mean);
  }
  return { low, high };
}

/** Empties the summaries (the legend, the table, its CSV, the selection's trend) and says why. */
function clearSummary(note: string): void {
  ui.mapLegend.hidden = true;
  ui.summaryRows.replaceChildren();
  ui.summaryNote.textContent = note;
  ui.summaryCsv.hidden = true;
  ui.summaryCsv.removeAttribute("href");
  if (summaryCsvUrl !== undefined) URL.revokeObjectURL(summaryCsvUrl);
  summaryCsvUrl = undefined;
  clearTrend(
    trendPlot,
    ui.trendNote,
    hints.trend,
  );
}

/**
 * Asks for a selection's summaries, one `$apply` each: per dataset and
 * location (the map, the table), per dataset, and the trend (yearly or monthly).
 */
async function summarise(selection: Selection, signal: AbortSignal): Promise<void> {
  const name = selection.characteristic;
  if (name === "") return;
  const found = await getAll<SummaryRow>(applyPath(summaryApply(selection)), signal);
  summaries = new Map(found.rows.map((row) => [row.LocationId, row]));
  colourUnit = mainUnit(found.rows);
  showMap();
  const { low, high } = rangeOfMeans();
  if (Number.isFinite(low)) {
    const unit = displayUnit(colourUnit);
    ui.legendWhat.textContent = `Mean ${name} per location${unit === "" ? "" : ` (${unit})`}:`;
    ui.legendLow.value = summaryNumber(low);
    ui.legendHigh.value = summaryNumber(high);
    ui.mapLegend.hidden = false;
  }
  const perDataset = await getAll<DatasetSummaryRow>(
    applyPath(datasetSummaryApply(selection)),
    signal,
  );
  const names = new Map(datasets.map((dataset) => [dataset.DOI, dataset.DatasetName]));
  const rows = summaryTable(
    perDataset.rows,
    found.rows,
    (doi) => names.get(doi) ?? doi,
    (id) => locations.get(id)?.Name ?? String(id),
  );
  drawSummaryTable(ui.summaryRows, rows);
  ui.summaryNote.textContent = `${format(perDataset.rows.length)} datasets, ${
    format(found.rows.length)
  } locations with readings of ${name}${found.complete ? "" : " (only the first are listed)"}.`;
  if (summaryCsvUrl !== undefined) URL.revokeObjectURL(summaryCsvUrl);
  summaryCsvUrl = URL.createObjectURL(new Blob([summaryCsv(rows)], { type: "text/csv" }));
  ui.summaryCsv.href = summaryCsvUrl;
  ui.summaryCsv.download = `${
    ["summary", selection.dataset, selection.region, name].filter((part) => part !== "").join("-")
      .replace(/[^\w.-]+/g, "_")
  }.csv`;
  ui.summaryCsv.hidden = rows.length === 0;
  await drawTrend(trendPlot, {
    selection,
    locationId: undefined,
    title: `${name}, the whole selection`,
    note: ui.trendNote,
    signal,
  });
}

/** Asks for a trend at the period chosen and draws it (asking again should the period change meanwhile). */
async function drawTrend(drawing: Drawing, ask: TrendAsk): Promise<void> {
  trendAsks.set(drawing, ask);
  trendsAsking.set(drawing, ask);
  try {
    for (;;) {
      const at = period();
      const path = applyPath(trendApply(ask.selection, ask.locationId, at));
      const trend = await getAll<TrendRow>(path, ask.signal);
      if (at !== period()) continue;
      showTrend(drawing, ask.note, trend.rows, ask.title, at);
      return;
    }
  } finally {
    if (trendsAsking.get(drawing) === ask) trendsAsking.delete(drawing);
  }
}

/** Draws the trends shown again at the period now chosen, one `$apply` each. */
function changePeriod(): void {
  if (shown !== undefined && shown.selection.characteristic !== "") showTrendUrl(shown.selection);
  for (const [drawing, ask] of trendAsks) {
    if (trendsAsking.has(drawing) || ask.signal.aborted) continue;
    drawTrend(drawing, ask).catch((error: unknown) => {
      if (error instanceof DOMException && error.name === "AbortError") return;
      ask.note.textContent = `Cannot draw the trend: ${
        error instanceof Error ? error.message : String(error)
      }`;
    });
  }
}

/** Draws a trend (a point per year or month, at its first day) and says what it shows. */
function showTrend(
  drawing: Drawing,
  note: HTMLElement,
  rows: readonly TrendRow[],
  title: string,
  at: TrendPeriod,
): void {
  const points: SeriesPoint[] = [];
  let readings = 0, other = 0;
  const main = mainUnit(rows);
  for (const row of rows) {
    if (!inUnit(row, main)) other++;
    if (row.Year === null || row.Mean === null || !inUnit(row, main)) continue;
    const month = at === "month" ? row.Month : 1;
    if (month === null || month === undefined) continue;
    points.push({ time: Date.UTC(row.Year, month - 1, 1), value: row.Mean });
    readings += row.Count;
  }
  const unit = displayUnit(main);
  const series: Series = {
    points,
    units: unit === "" ? [] : [unit],
    title: `mean ${title}`,
    noun: `${at === "month" ? "monthly" : "yearly"} means`,
  };
  trends.set(drawing, series);
  drawnWidths.set(drawing.svg, drawSeries(drawing, series));
  note.textContent = points.length === 0
    ? `No readings of ${title}.`
    : `Mean of ${title}, per ${at}: ${format(points.length)} ${at}s, ${format(readings)} readings${
      other > 0 ? `; ${other} ${at}s in other units left out` : ""
    }.`;
}

function clearTrend(drawing: Drawing, note: HTMLElement, text: string): void {
  trends.delete(drawing);
  trendAsks.delete(drawing);
  clearSeries(drawing);
  note.textContent = text;
}

/** Draws the map and the plot again when their width on the page changes (a turned phone, a resized window). */
function redrawOnResize(): void {
  let pending = false;
  const observer = new ResizeObserver(() => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const changed = (element: SVGSVGElement): boolean => {
        const width = Math.round(element.getBoundingClientRect().width);
        return width > 0 && width !== drawnWidths.get(element);
      };
      if (changed(ui.map)) showMap();
      if (plotted !== undefined && !ui.series.hasAttribute("hidden") && changed(ui.series)) {
        showSeries(plotted);
      }
      for (const [drawing, series] of trends) {
        if (changed(drawing.svg)) drawnWidths.set(drawing.svg, drawSeries(drawing, series));
      }
    });
  });
  observer.observe(ui.map);
  observer.observe(ui.series);
  observer.observe(trendPlot.svg);
  observer.observe(locationTrendPlot.svg);
}

// --- Characteristic suggestions, copying and the CSV download ---------------------------

async function suggestCharacteristics(): Promise<void> {
  if (key === "") return;
  const selection = { ...readSelection(), characteristic: "" };
  const filter = buildFilter(selection);
  if (suggestionsFor === filter) return;
  suggestionsFor = filter;
  try {
    const page = await getJson<Page<{ CharacteristicName: string | null }>>(
      collectionPath(apiBase, "Observations", [["$filter", filter], [
        "$select",
        "CharacteristicName",
      ], ["$top", String(SUGGESTION_SAMPLE)]]),
      new AbortController().signal,
    );
    const names = new Set<string>();
    for (const row of page.value) {
      if (row.CharacteristicName !== null && row.CharacteristicName !== "") {
        names.add(row.CharacteristicName);
      }
    }
    ui.suggestions.replaceChildren(
      ...[...names].sort((a, b) => a.localeCompare(b)).map((name) => new Option(name)),
    );
  } catch {
    suggestionsFor = undefined;
  }
}

async function copy(text: string, button: HTMLButtonElement): Promise<void> {
  const label = button.textContent;
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = "Copied";
  } catch {
    button.textContent = "Cannot copy: select the text";
  }
  setTimeout(() => (button.textContent = label), 1500);
}

async function downloadCsv(): Promise<void> {
  if (shown === undefined) return;
  const { filter, selection } = shown;
  ui.download.disabled = true;
  say("Preparing the CSV…");
  try {
    const csv = await api.request(csvPath(filter), {
      signal: shown.controller.signal,
      read: (response) => response.blob(),
      accept: "text/csv",
    });
    const url = URL.createObjectURL(csv);
    const a = document.createElement("a");
    a.href = url;
    a.download = `${
      ["records", selection.dataset, selection.region, selection.characteristic].filter((part) =>
        part !== ""
      ).join("-").replace(/[^\w.-]+/g, "_")
    }.csv`;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    say(`Downloaded ${a.download} (${format(csv.size)} bytes).`);
  } catch (error) {
    failed(error);
  } finally {
    ui.download.disabled = false;
  }
}

// --- Wiring ------------------------------------------------------------------------------

ui.keyForm.addEventListener("submit", (event) => {
  event.preventDefault();
  const given = ui.key.value.trim();
  if (given === "") return;
  key = given;
  sessionStorage.setItem(KEY_STORAGE, key);
  suggestionsFor = undefined;
  void start();
});
ui.forget.addEventListener("click", () => {
  sessionStorage.removeItem(KEY_STORAGE);
  key = "";
  shown?.controller.abort();
  ui.key.placeholder = "";
  ui.key.focus();
  void start();
});
ui.filters.addEventListener("submit", (event) => {
  event.preventDefault();
  if (key === "") {
    say("Enter your API key first.");
    ui.key.focus();
    return;
  }
  void show(readSelection());
});
ui.dataset.addEventListener("change", datesOfDataset);
ui.characteristic.addEventListener("focus", () => void suggestCharacteristics());
ui.period.addEventListener("change", changePeriod);
ui.seriesLocation.addEventListener("change", () => chooseLocation(Number(ui.seriesLocation.value)));
ui.map.addEventListener("click", (event) => {
  const target = event.target;
  if (target instanceof SVGCircleElement && target.dataset["id"] !== undefined) {
    chooseLocation(Number(target.dataset["id"]));
  }
});
ui.previous.addEventListener("click", () => void turnPage(false));
ui.next.addEventListener("click", () => void turnPage(true));
ui.copyUrl.addEventListener("click", () => void copy(ui.apiUrl.textContent ?? "", ui.copyUrl));
ui.copyCurl.addEventListener("click", () => void copy(ui.apiCurl.textContent ?? "", ui.copyCurl));
ui.download.addEventListener("click", () => void downloadCsv());
ui.attribution.hidden = tileTemplate === "" || (ui.attribution.textContent ?? "").trim() === "";

readHash();
showMap();
redrawOnResize();
void start();
void loadBasemap();

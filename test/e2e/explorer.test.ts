// The water-data explorer at `/`, end to end: the real server (server.ts) on
// the demo data with its default rate limit, the page in headless Chromium,
// and the API asked directly (with a key of the test's own, so that the test
// never takes the page's place under its key's limit) for what the page
// should show. Screenshots at desktop and phone widths go to test-artifacts/.
import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page, Request } from "playwright-core";
import {
  browserSkip,
  launchBrowser,
  parseCsp,
  saveScreenshot,
  VIEWPORTS,
} from "../_helpers/browser.ts";
import { rawRequest } from "../_helpers/http.ts";
import {
  assertNoSidewaysScroll,
  assertQuiet,
  fetchPage,
  inContext,
  type OpenedPage,
  openPage,
  PHONE,
} from "../_helpers/page_harness.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";
import { FIXTURE_HEADER, fixtureRow } from "../_helpers/water.ts";

/** The page's key: `npm start`'s demo key. */
const KEY = "tributary-demo-key";
/** The key the test asks the API with itself. */
const CHECK_KEY = "explorer-test-key";
const API = "/v1/odata/v4";
const REGION = "hub.atlantic";
const CHARACTERISTIC = "pH";
/** The filter the page should build for the region and characteristic, and the test's own queries. */
const FILTER = `RegionId eq '${REGION}' and CharacteristicName eq '${CHARACTERISTIC}'`;
/** A desktop browser context that keeps what the page downloads (its CSV). */
const DESKTOP_DOWNLOADS = { viewport: VIEWPORTS.desktop, acceptDownloads: true } as const;

let url = "";
let browser: Browser;
const temporary = mkdtempSync(join(tmpdir(), "tributary-explorer-"));
after(() => rmSync(temporary, { recursive: true, force: true }));

/** An API keys file of the demo key (the page's) and the test's own. */
function keysFile(): string {
  const file = join(temporary, "api_keys.json");
  writeFileSync(
    file,
    JSON.stringify({ api_keys: [{ name: "demo", key: KEY }, { name: "checks", key: CHECK_KEY }] }),
  );
  return file;
}

/** Asks the API directly, with the test's own key. */
async function api(path: string): Promise<Response> {
  const response = await fetch(`${url}${API}/${path}`, { headers: { "x-api-key": CHECK_KEY } });
  assert.equal(response.status, 200, `${path}: ${response.status}`);
  return response;
}

async function count(collection: string, filter: string): Promise<number> {
  const body = (await (await api(`${collection}?$count=true&$filter=${encodeURIComponent(filter)}`))
    .json()) as { "@odata.count": number };
  return body["@odata.count"];
}

/** What a page did with the API: each answer's status, and the most requests it had in flight at once. */
interface ApiTraffic {
  readonly statuses: readonly number[];
  /** Each answer that was not a 200, as `<status> <path and query>`, to say which one. */
  readonly refused: readonly string[];
  mostInFlight(): number;
  /** Resolves once no API request of the page is in flight. */
  settled(): Promise<void>;
}

/**
 * A new page whose requests, API answers and errors (script errors, and what
 * the console reports: a request the policy blocked, a failed load, a 429)
 * are all recorded, with the key already given, as after "Use this key" in
 * the same tab.
 */
async function openExplorer(
  context: BrowserContext,
  origin: string,
  hash = "",
): Promise<OpenedPage & { readonly traffic: ApiTraffic }> {
  const isApi = (request: Request): boolean =>
    new URL(request.url()).pathname.startsWith(`${API}/`);
  const statuses: number[] = [];
  const refused: string[] = [];
  let inFlight = 0;
  let most = 0;
  const opened = await openPage(context, `${origin}/${hash}`, async (page) => {
    page.on("request", (request) => {
      if (isApi(request)) most = Math.max(most, ++inFlight);
    });
    const ended = (request: Request): void => {
      if (isApi(request)) inFlight--;
    };
    page.on("requestfinished", ended);
    page.on("requestfailed", ended);
    page.on("response", (response) => {
      if (!isApi(response.request())) return;
      statuses.push(response.status());
      if (response.status() !== 200) {
        const target = new URL(response.url());
        refused.push(`${response.status()} ${target.pathname}${target.search}`);
      }
    });
    await page.addInitScript(GIVE_KEY);
  });
  const settled = async (): Promise<void> => {
    while (inFlight > 0) {
      await Promise.race([
        opened.page.waitForEvent("requestfinished"),
        opened.page.waitForEvent("requestfailed"),
      ]);
    }
  };
  return { ...opened, traffic: { statuses, refused, mostInFlight: () => most, settled } };
}

/** What the map draws, as the browser lays it out. */
interface MapReport {
  /** The drawing's size (its viewBox), and its width on the page. */
  readonly width: number;
  readonly height: number;
  readonly shownWidth: number;
  /** The map's parts in the order drawn (the last on top): `desc`, then classes. */
  readonly order: readonly string[];
  /** Each basemap layer's path: its class, and its bounding box. */
  readonly layers: readonly {
    readonly name: string;
    readonly box: readonly [number, number, number, number];
  }[];
  readonly circles: readonly (readonly [number, number])[];
  /** Whether, at each location's centre, the element on top is a location. */
  readonly onTop: boolean;
}

/** Reads the map (scrolled into view, so that what is on top at a point can be asked). */
const MAP_REPORT = `(() => {
  const map = document.querySelector("#map");
  map.scrollIntoView({ block: "center" });
  const [, , width, height] = map.getAttribute("viewBox").split(" ").map(Number);
  const circles = [...map.querySelectorAll("circle.location")];
  return {
    width, height, shownWidth: Math.round(map.getBoundingClientRect().width),
    order: [...map.children].map((child) => child.getAttribute("class") ?? child.tagName),
    layers: [...map.querySelectorAll(".basemap path")].map((path) => {
      const box = path.getBBox();
      return { name: path.getAttribute("class"), box: [box.x, box.y, box.width, box.height] };
    }),
    circles: circles.map((circle) => [Number(circle.getAttribute("cx")), Number(circle.getAttribute("cy"))]),
    onTop: circles.every((circle) => {
      const box = circle.getBoundingClientRect();
      return document.elementFromPoint(box.x + box.width / 2, box.y + box.height / 2)?.matches("circle.location") === true;
    }),
  };
})()`;

/** Checks a map: drawn at its width on the page, its layers inside the drawing (a few pixels of cut aside), the locations inside and on top. */
function assertMap(report: MapReport, layers: readonly string[]): void {
  assert.equal(report.width, report.shownWidth, "drawn at its width on the page");
  assert.deepEqual(report.order, ["desc", "sea", "basemap", "graticule", "locations"]);
  assert.deepEqual(report.layers.map((layer) => layer.name), layers);
  for (const { name, box: [x, y, width, height] } of report.layers) {
    assert.ok(width > 0 && height > 0, `${name} is drawn`);
    assert.ok(
      x >= -4.5 && y >= -4.5 && x + width <= report.width + 4.5 &&
        y + height <= report.height + 4.5,
      `${name} ${[x, y, width, height]} within ${report.width}x${report.height}`,
    );
  }
  assert.ok(report.circles.length > 0);
  for (const [cx, cy] of report.circles) {
    assert.ok(
      cx >= 0 && cx <= report.width && cy >= 0 && cy <= report.height,
      `a location at ${cx},${cy}`,
    );
  }
  assert.equal(report.onTop, true, "every location is on top of the map");
}

/** The size each label of the map, the series and the two yearly trends is drawn at on the screen, in CSS pixels. */
const LABEL_SIZES =
  `Object.fromEntries(["#map", "#series", "#trend", "#location-trend"].map((drawing) => [drawing,
  [...document.querySelectorAll(drawing + " text")].map((text) => parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a)]))`;

/** Each column of the table, by its heading: whether scrolling the table's box (not the page) to it shows it whole. */
const TABLE_REACH = `(() => {
  const box = document.querySelector(".table-scroll");
  const reach = Object.fromEntries([...document.querySelectorAll("#observations thead th")].map((th) => {
    box.scrollLeft += th.getBoundingClientRect().left - box.getBoundingClientRect().left;
    const frame = box.getBoundingClientRect();
    const cell = th.getBoundingClientRect();
    return [th.textContent, cell.left >= frame.left - 1 && cell.right <= frame.right + 1];
  }));
  box.scrollLeft = 0;
  return reach;
})()`;

// What runs in the page: source text for `evaluate` and init scripts (which the
// browser runs as the debugger does), functions for `waitForFunction` (whose
// strings the page's policy refuses to evaluate, as it should). This tsconfig
// has no DOM types; the functions see the page's globals as below.
interface DrawingGlobals {
  getAttribute(name: string): string | null;
  getBoundingClientRect(): { readonly width: number };
}

/** What the pure-function test draws a path with. */
interface PathDocument {
  createElementNS(namespace: string, name: string): {
    setAttribute(name: string, value: string): void;
    getBBox(): {
      readonly x: number;
      readonly y: number;
      readonly width: number;
      readonly height: number;
    };
    remove(): void;
  };
  querySelector(selector: string): { append(node: unknown): void } | null;
}

interface PageGlobals {
  readonly document: {
    readonly body: { readonly dataset: Readonly<Record<string, string | undefined>> };
    querySelector(selector: string): { readonly textContent: string | null } | null;
  };
}

/** The key in the tab's session storage before the page's script runs. */
const GIVE_KEY = `sessionStorage.setItem("tributary.explorer.key", ${JSON.stringify(KEY)})`;

/** Waits until the page shows a selection whole (map, count, first page) for a filter. */
async function shownFilter(page: Page, filter: string): Promise<void> {
  await page.waitForFunction(
    (wanted) => (globalThis as unknown as PageGlobals).document.body.dataset["shown"] === wanted,
    filter,
    { timeout: 20_000 },
  );
}

/** Waits until the page shows a selection's summaries (from `$apply`) for a filter. */
async function summarisedFilter(page: Page, filter: string): Promise<void> {
  await page.waitForFunction(
    (wanted) =>
      (globalThis as unknown as PageGlobals).document.body.dataset["summarised"] === wanted,
    filter,
    { timeout: 20_000 },
  );
}

/** The test's own `$apply` of a summary per dataset and location, of the readings with a value. */
const SUMMARY_APPLY =
  `filter(${FILTER} and ResultValue ne null)/groupby((DOI,LocationId), aggregate($count as Count, ResultValue with average as Mean, ResultValue with min as Low, ResultValue with max as High, ResultUnit with countdistinct as Units, ResultUnit with min as Unit))`;

/** The test's own `$apply` of a summary per dataset. */
const DATASET_SUMMARY_APPLY =
  `filter(${FILTER} and ResultValue ne null)/groupby((DOI), aggregate($count as Count, ResultValue with average as Mean, ResultValue with min as Low, ResultValue with max as High, ResultUnit with countdistinct as Units, ResultUnit with min as Unit))`;

/** A CSV line's fields (RFC 4180: a quoted field may hold commas and doubled quotes). */
function csvCells(line: string): string[] {
  return [...line.matchAll(/(?:^|,)(?:"((?:[^"]|"")*)"|([^,]*))/g)].map((match) =>
    match[1] === undefined ? match[2]! : match[1].replaceAll('""', '"')
  );
}

/** A row of a summary's answer. */
interface SummaryAnswer {
  readonly DOI: string;
  readonly LocationId: number;
  readonly Count: number;
  readonly Mean: number;
  readonly Low: number;
  readonly High: number;
  readonly Units: number;
  readonly Unit: string;
}

/** The test's own monthly trend of the selection (of one location's, when given), month by month. */
async function monthlyMeans(
  locationId?: number,
): Promise<{ Year: number; Month: number; Mean: number }[]> {
  const where = locationId === undefined ? "" : ` and LocationId eq ${locationId}`;
  const apply =
    `filter(${FILTER}${where} and ResultValue ne null)/compute(year(ActivityStartDate) as Year, month(ActivityStartDate) as Month)/groupby((Year,Month), aggregate(ResultValue with average as Mean))`;
  const body = (await (await api(
    `Observations?$top=10000&$apply=${encodeURIComponent(apply)}`,
  )).json()) as { value: { Year: number; Month: number; Mean: number }[] };
  return body.value;
}

/** Waits until a drawing's description starts with a text. */
async function described(page: Page, drawing: string, start: string): Promise<void> {
  await textStarts(page, `${drawing}-description`, start);
}

/** The test's own yearly trend of the selection (of one location's, when given). */
async function yearlyMeans(locationId?: number): Promise<{ Year: number; Mean: number }[]> {
  const where = locationId === undefined ? "" : ` and LocationId eq ${locationId}`;
  const apply =
    `filter(${FILTER}${where} and ResultValue ne null)/compute(year(ActivityStartDate) as Year)/groupby((Year), aggregate(ResultValue with average as Mean))`;
  const body = (await (await api(`Observations?$apply=${encodeURIComponent(apply)}`)).json()) as {
    value: { Year: number; Mean: number }[];
  };
  return body.value;
}

/** A number as the summaries write it: whole as it is, else to six significant digits. */
function six(value: number): string {
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
}

/** Waits until an element's text starts with a text. */
async function textStarts(page: Page, selector: string, start: string): Promise<void> {
  await page.waitForFunction(
    ([where, text]) =>
      (globalThis as unknown as PageGlobals).document.querySelector(where!)?.textContent
        ?.startsWith(text!) === true,
    [selector, start],
  );
}

/** Waits until the first cell of the table is an observation's id. */
async function firstRowIs(page: Page, id: number): Promise<void> {
  await page.waitForFunction(
    (wanted) =>
      (globalThis as unknown as PageGlobals).document.querySelector("#observations tbody td")
        ?.textContent === wanted,
    String(id),
  );
}

function digits(text: string | null): number {
  return Number((text ?? "").replace(/[^\d]/g, ""));
}

describe("the water-data explorer at /, in headless Chromium", { skip: browserSkip }, () => {
  before(async () => {
    // The server's default rate limit (a burst, two requests a second, one in flight per key), which the page must never trip.
    const started = startServer({ SERVICES: "water", API_KEYS_FILE: keysFile() });
    [url, browser] = await Promise.all([listeningUrl(started), launchBrowser()]);
  });

  after(() => browser?.close());

  it("serves the page under a strict Content-Security-Policy, with no inline script or style, in under 100 KB", async () => {
    const { links, files, bytes } = await fetchPage(`${url}/`, {
      "default-src": ["'none'"],
      "script-src": ["'self'"],
      "style-src": ["'self'"],
      "connect-src": ["'self'"], // no tile server is configured
      "img-src": ["'self'", "data:"],
      "frame-ancestors": ["'none'"],
      "base-uri": ["'none'"],
    });
    // Every file the page loads is on its own origin.
    for (const link of links) assert.ok(link.startsWith("/") || link.startsWith("data:"), link);
    assert.deepEqual(links.filter((href) => href.startsWith("/")).sort(), [
      "/explorer/explorer.css",
      "/explorer/explorer.js",
    ]);
    // The page's module and every module it imports, each beside it under /explorer/.
    const loaded = files.map((file) => file.path);
    assert.deepEqual(loaded.sort(), [
      "/explorer/api_client.js",
      "/explorer/drawing.js",
      "/explorer/explorer.css",
      "/explorer/explorer.js",
      "/explorer/map.js",
      "/explorer/plot.js",
      "/explorer/query.js",
      "/explorer/summary.js",
      "/explorer/table.js",
    ]);
    console.log(
      `# the explorer's HTML, CSS and JavaScript (${
        loaded.length - 1
      } modules): ${bytes} bytes before any data`,
    );
    assert.ok(bytes < 100 * 1024, `${bytes} bytes`);
  });

  it("serves the map's land, lakes, rivers and borders as one file, under 100 KB gzipped", async () => {
    const html = await (await fetch(`${url}/`)).text();
    assert.match(html, /<meta name="explorer:basemap" content="\/explorer\/basemap\.json">/);
    const port = Number(new URL(url).port);
    const gzipped = await rawRequest(port, {
      path: "/explorer/basemap.json",
      headers: { "accept-encoding": "gzip" },
    });
    assert.equal(gzipped.status, 200);
    assert.equal(gzipped.headers["content-type"], "application/json");
    assert.equal(gzipped.headers["content-encoding"], "gzip");
    assert.ok(gzipped.headers["content-security-policy"] !== undefined);
    console.log(`# the explorer's basemap: ${gzipped.body.length} bytes gzipped`);
    assert.ok(gzipped.body.length < 100 * 1024, `${gzipped.body.length} bytes gzipped`);
    const basemap = (await (await fetch(`${url}/explorer/basemap.json`)).json()) as {
      source: string;
      unitsPerDegree: number;
      layers: { name: string; kind: string; shapes: number[][] }[];
    };
    assert.match(basemap.source, /^Natural Earth .*public domain/);
    assert.deepEqual(basemap.layers.map((layer) => [layer.name, layer.kind]), [
      ["land", "area"],
      ["lakes", "area"],
      ["rivers", "line"],
      ["provinces", "line"],
      ["countries", "line"],
    ]);
    for (const layer of basemap.layers) assert.ok(layer.shapes.length > 10, layer.name);
  });

  it("filters to a region and a characteristic, shows the API's count, draws its locations, plots a series, pages and downloads the CSV, never tripping the rate limit", async () => {
    await inContext(browser, DESKTOP_DOWNLOADS, async (context) => {
      const opened = await openExplorer(context, url);
      const { page, requests, traffic } = opened;
      await shownFilter(page, "");
      // Every location, over Canada: every layer of the basemap drawn under them.
      await page.waitForSelector("#map .basemap path.land");
      assertMap(await page.evaluate<MapReport>(MAP_REPORT), [
        "land",
        "lakes",
        "rivers",
        "provinces",
        "countries",
      ]);
      const first = await page.evaluate<number | undefined>(
        `performance.getEntriesByName("explorer:first-render")[0]?.startTime`,
      );
      assert.equal(typeof first, "number");
      console.log(
        `# the explorer's first render with the demo data (datasets, map of every location, count, first page): ${
          Math.round(first!)
        } ms after navigation`,
      );
      assert.equal(digits(await page.textContent("#count")), await count("Observations", "true"));

      // The filters, from the keyboard: a region, then a characteristic and Enter.
      await page.selectOption("#region", REGION);
      await page.focus("#characteristic");
      await page.keyboard.type(CHARACTERISTIC);
      await page.keyboard.press("Enter");
      await shownFilter(page, FILTER);
      const observations = await count("Observations", FILTER);
      const places = await count("Locations", FILTER);
      assert.ok(
        observations > 0 && places > 1,
        `${observations} observations at ${places} locations`,
      );
      assert.equal(digits(await page.textContent("#count")), observations);
      assert.equal(digits(await page.textContent("#location-count")), places);
      assert.equal(await page.locator("#map circle.location").count(), places);

      // The table's first page is the API URL the page shows; Next follows the API's next link.
      const shownUrl = await page.textContent("#api-url");
      assert.ok(shownUrl?.startsWith(`${url}${API}/Observations?`), shownUrl ?? "");
      const firstPage =
        (await (await fetch(shownUrl!, { headers: { "x-api-key": CHECK_KEY } })).json()) as {
          value: { Id: number; ResultUnit: string | null }[];
          "@odata.nextLink": string;
        };
      const tableIds = async (): Promise<number[]> =>
        (await page.locator("#observations tbody tr td:first-child").allTextContents()).map(
          Number,
        );
      assert.deepEqual(await tableIds(), firstPage.value.map((row) => row.Id));
      assert.equal(
        await page.textContent("#api-curl"),
        `curl -H 'x-api-key: ${KEY}' '${shownUrl}'`,
      );
      // WQX's unit of pH is "None": the table shows no unit.
      assert.deepEqual([...new Set(firstPage.value.map((row) => row.ResultUnit))], ["None"]);
      assert.deepEqual([
        ...new Set(
          await page.locator("#observations tbody tr td:nth-child(7)").allTextContents(),
        ),
      ], [""]);
      const secondPage = (await (await fetch(firstPage["@odata.nextLink"], {
        headers: { "x-api-key": CHECK_KEY },
      }))
        .json()) as { value: { Id: number }[] };
      await page.click("#next");
      await firstRowIs(page, secondPage.value[0]!.Id);
      assert.deepEqual(await tableIds(), secondPage.value.map((row) => row.Id));
      await page.click("#previous");
      await firstRowIs(page, firstPage.value[0]!.Id);

      // A location picked on the map (the last drawn, which no other covers): its series, one point per reading with a value.
      const dot = page.locator("#map circle.location").last();
      const id = Number(await dot.getAttribute("data-id"));
      await dot.click();
      await page.waitForSelector("#series[data-points]");
      const readings = (await (await api(
        `Observations?$select=ResultValue&$top=10000&$filter=${
          encodeURIComponent(`${FILTER} and LocationId eq ${id}`)
        }`,
      )).json()) as { value: { ResultValue: number | null }[] };
      const withValue = readings.value.filter((row) => typeof row.ResultValue === "number").length;
      assert.ok(withValue > 1, `${withValue} readings at location ${id}`);
      assert.equal(Number(await page.getAttribute("#series", "data-points")), withValue);
      assert.equal(await page.locator("#series circle.point").count(), withValue);
      assert.equal(await page.locator("#series polyline.line").count(), 1);
      assert.equal(await page.inputValue("#series-location"), String(id));
      assert.equal(
        await page.locator("#series text.unit").count(),
        0,
        "no unit over a plot of pH",
      );
      assert.doesNotMatch(await page.textContent("#series-note") ?? "", /None/);
      // The region's locations fill the map, over its land and water.
      assertMap(await page.evaluate<MapReport>(MAP_REPORT), [
        "land",
        "lakes",
        "rivers",
        "provinces",
        "countries",
      ]);

      // The CSV download is the API's CSV for the same filter.
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.click("#download"),
      ]);
      const downloaded = await readFile(await download.path());
      const csv = Buffer.from(
        await (await api(`Records?$format=csv&$filter=${encodeURIComponent(FILTER)}`))
          .arrayBuffer(),
      );
      assert.ok(csv.length > 1000);
      assert.ok(
        downloaded.equals(csv),
        `the download (${downloaded.length} bytes) differs from the API's CSV (${csv.length} bytes)`,
      );

      // Every dataset's citation, licence and DOI link, from /Metadata.
      const datasets = (await (await api("Metadata?$select=DOI,Citation,Licence")).json()) as {
        value: { DOI: string; Citation: string; Licence: string }[];
      };
      const citations = await page.textContent("#citations");
      const links = await Promise.all(
        (await page.locator("#citations a").all()).map((a) => a.getAttribute("href")),
      );
      for (const dataset of datasets.value) {
        assert.ok(citations?.includes(dataset.Citation), dataset.DOI);
        assert.ok(links.includes(`https://doi.org/${dataset.DOI}`), dataset.DOI);
        assert.ok(links.includes(dataset.Licence), dataset.Licence);
      }

      // Every control is labelled.
      const unlabelled = await page.evaluate<string[]>(
        `[...document.querySelectorAll("input, select")].filter((c) => c.labels.length === 0).map((c) => c.id)`,
      );
      assert.deepEqual(unlabelled, []);

      await saveScreenshot(page, "explorer-desktop");
      // Narrowed to a phone's width, the map and the plot are drawn again at it, their labels as large.
      await page.setViewportSize(VIEWPORTS.phone);
      await page.waitForFunction(() => {
        const map = (globalThis as unknown as PageGlobals).document.querySelector(
          "#map",
        ) as unknown as DrawingGlobals;
        return map.getAttribute("viewBox")?.split(" ")[2] ===
          String(Math.round(map.getBoundingClientRect().width));
      });
      const sizes = await page.evaluate<Record<string, number[]>>(LABEL_SIZES);
      assert.ok(Math.min(...sizes["#map"]!, ...sizes["#series"]!) >= 11, JSON.stringify(sizes));

      assert.ok(
        requests.some((request) => request.includes("/Locations?")) &&
          requests.some((request) => request.includes("/Records?")),
      );
      // Its modules, the pages' shared API client among them, loaded under the page's own path.
      for (const module of ["explorer", "query", "map", "plot", "table", "api_client"]) {
        assert.ok(requests.includes(`${url}/explorer/${module}.js`), module);
      }
      // Under the default limit: no 429, never two requests of the key in flight, and so nothing in the console.
      assert.ok(traffic.statuses.length >= 10, `${traffic.statuses.length} answers`);
      assert.deepEqual([...new Set(traffic.statuses)], [200]);
      assert.equal(traffic.mostInFlight(), 1);
      assertQuiet(opened, url);
    });
  });

  it("colours the map by each location's mean from one $apply request, plots yearly trends, lists the summary with its CSV and shows the $apply URL it asked", async () => {
    await inContext(browser, DESKTOP_DOWNLOADS, async (context) => {
      const opened = await openExplorer(
        context,
        url,
        `#region=${REGION}&characteristic=${CHARACTERISTIC}`,
      );
      const { page, requests, traffic } = opened;
      await summarisedFilter(page, FILTER);
      const summary = ((await (await api(
        `Observations?$apply=${encodeURIComponent(SUMMARY_APPLY)}`,
      )).json()) as { value: SummaryAnswer[] }).value;
      assert.ok(summary.length > 1, `${summary.length} locations summarised`);
      // pH's readings are all in WQX's unit "None", which the page writes as no unit.
      assert.deepEqual([...new Set(summary.map((row) => `${row.Units} ${row.Unit}`))], [
        "1 None",
      ]);

      // The summary's numbers are those of the rows: one location's readings, asked for as rows.
      const checked = summary[0]!;
      const values = ((await (await api(
        `Observations?$select=ResultValue&$top=10000&$filter=${
          encodeURIComponent(`${FILTER} and LocationId eq ${checked.LocationId}`)
        }`,
      )).json()) as { value: { ResultValue: number | null }[] }).value.flatMap((row) =>
        typeof row.ResultValue === "number" ? [row.ResultValue] : []
      );
      assert.equal(checked.Count, values.length);
      assert.equal(checked.Low, Math.min(...values));
      assert.equal(checked.High, Math.max(...values));
      assert.ok(
        Math.abs(checked.Mean - values.reduce((a, b) => a + b, 0) / values.length) < 1e-9,
      );

      // The $apply URL shown is the one the page asked, and it answers the summary.
      const shownApply = await page.textContent("#apply-url");
      assert.ok(shownApply?.startsWith(`${url}${API}/Observations?$apply=`), shownApply ?? "");
      assert.ok(requests.includes(shownApply!), "the page asked the URL it shows");
      assert.equal(new URL(shownApply!).searchParams.get("$apply"), SUMMARY_APPLY);
      assert.equal(
        await page.textContent("#apply-curl"),
        `curl -H 'x-api-key: ${KEY}' '${shownApply}'`,
      );
      const shownAnswer =
        (await (await fetch(shownApply!, { headers: { "x-api-key": CHECK_KEY } })).json()) as {
          value: SummaryAnswer[];
        };
      assert.deepEqual(shownAnswer.value, summary);
      const shownTrend = await page.textContent("#trend-url");
      assert.ok(requests.includes(shownTrend!), "the page asked the trend it shows");

      // The map: each location coloured by its mean (the lowest the palette's first colour, the highest its last, as rendered), its tooltip the mean, count and range.
      const names = new Map(
        ((await (await api(
          `Locations?$select=Id,Name&$top=5000&$filter=${encodeURIComponent(FILTER)}`,
        )).json()) as { value: { Id: number; Name: string }[] }).value.map((row) => [
          row.Id,
          row.Name,
        ]),
      );
      const dots = await page.evaluate<
        { id: number; fill: string | null; rendered: string; title: string }[]
      >(
        `[...document.querySelectorAll("#map circle.location")].map((dot) => ({
          id: Number(dot.dataset.id), fill: dot.getAttribute("fill"),
          rendered: getComputedStyle(dot).fill, title: dot.querySelector("title").textContent,
        }))`,
      );
      assert.equal(dots.length, names.size);
      const byId = new Map(dots.map((dot) => [dot.id, dot]));
      for (const row of summary) {
        const dot = byId.get(row.LocationId);
        assert.ok(dot !== undefined, `location ${row.LocationId} is drawn`);
        assert.match(dot.fill ?? "", /^#[0-9a-f]{6}$/);
        assert.equal(
          dot.title,
          `${names.get(row.LocationId)} (location ${row.LocationId}): mean ${
            six(row.Mean)
          }, ${row.Count} readings, range ${six(row.Low)}–${six(row.High)}`,
        );
      }
      const means = summary.map((row) => row.Mean);
      const lowest = summary.find((row) => row.Mean === Math.min(...means))!;
      const highest = summary.find((row) => row.Mean === Math.max(...means))!;
      assert.equal(byId.get(lowest.LocationId)!.fill, "#440154");
      assert.equal(byId.get(lowest.LocationId)!.rendered, "rgb(68, 1, 84)");
      assert.equal(byId.get(highest.LocationId)!.fill, "#fde725");
      assert.equal(byId.get(highest.LocationId)!.rendered, "rgb(253, 231, 37)");
      assert.equal(await page.isVisible("#map-legend"), true);
      assert.equal(await page.textContent("#legend-low"), six(Math.min(...means)));
      assert.equal(await page.textContent("#legend-high"), six(Math.max(...means)));

      // The selection's yearly trend: a point per year of the API's $apply, higher for a higher mean.
      const years = await yearlyMeans();
      assert.ok(years.length > 1, `${years.length} years`);
      assert.equal(Number(await page.getAttribute("#trend", "data-points")), years.length);
      const trendYs = await page.locator("#trend circle.point").evaluateAll((points) =>
        points.map((point) => Number(point.getAttribute("cy")))
      );
      assert.equal(trendYs.length, years.length);
      const order = (list: readonly number[]): number[] =>
        list.map((_, index) => index).sort((a, b) => list[a]! - list[b]! || a - b);
      assert.deepEqual(order(trendYs.map((y) => -y)), order(years.map((year) => year.Mean)));
      assert.match(
        await page.textContent("#trend-description") ?? "",
        new RegExp(`^${years.length} yearly means of mean pH, the whole selection`),
      );

      // The summary table: each dataset's row, then its locations', as the API counted and averaged.
      const perDataset = ((await (await api(
        `Observations?$apply=${encodeURIComponent(DATASET_SUMMARY_APPLY)}`,
      )).json()) as { value: Omit<SummaryAnswer, "LocationId">[] }).value;
      assert.ok(perDataset.length > 1, `${perDataset.length} datasets summarised`);
      const tableRows = await page.locator("#summary-rows tr").evaluateAll((rows) =>
        rows.map((row) => ({
          doi: row.getAttribute("data-dataset"),
          id: row.getAttribute("data-location"),
          cells: [...row.querySelectorAll("td")].map((cell) => cell.textContent),
        }))
      );
      assert.equal(tableRows.length, perDataset.length + summary.length);
      const datasets = new Map(
        ((await (await api("Metadata?$select=DOI,DatasetName")).json()) as {
          value: { DOI: string; DatasetName: string }[];
        }).value.map((row) => [row.DOI, row.DatasetName]),
      );
      let under: string | undefined;
      for (const { doi, id, cells } of tableRows) {
        const row = doi === null
          ? summary.find((candidate) => candidate.LocationId === Number(id))!
          : perDataset.find((candidate) => candidate.DOI === doi)!;
        if (doi !== null) under = doi;
        assert.equal(row.DOI, under, "a location's row follows its dataset's");
        assert.deepEqual(cells, [
          datasets.get(row.DOI),
          doi === null ? `${names.get(Number(id))} (${id})` : "All locations",
          String(row.Count),
          "",
          six(row.Mean),
          six(row.Low),
          six(row.High),
        ]);
      }

      // Its CSV, from the link under it: the same rows, named, with no further request.
      const asked = requests.length;
      const [download] = await Promise.all([
        page.waitForEvent("download"),
        page.click("#summary-csv"),
      ]);
      assert.equal(download.suggestedFilename(), `summary-${REGION}-${CHARACTERISTIC}.csv`);
      const lines = (await readFile(await download.path(), "utf8")).split("\r\n");
      assert.equal(lines[0], "DOI,Dataset,LocationId,Location,Count,Unit,Mean,Min,Max");
      assert.equal(lines.length, tableRows.length + 2, "a line per row, each ended");
      assert.equal(lines.at(-1), "");
      const csvRows = lines.slice(1, -1).map(csvCells);
      assert.deepEqual(
        csvRows.filter((cells) => cells[2] !== "").map((cells) => Number(cells[2])).sort((a, b) =>
          a - b
        ),
        summary.map((row) => row.LocationId).sort((a, b) => a - b),
      );
      for (const cells of csvRows) {
        const row = cells[2] === ""
          ? perDataset.find((candidate) => candidate.DOI === cells[0])!
          : summary.find((candidate) => candidate.LocationId === Number(cells[2]))!;
        // Each field but the id (by which the row was found).
        assert.deepEqual(cells.toSpliced(2, 1), [
          row.DOI,
          datasets.get(row.DOI),
          cells[2] === "" ? "All locations" : names.get(Number(cells[2])),
          six(row.Count),
          "",
          ...[row.Mean, row.Low, row.High].map(six),
        ]);
      }
      assert.ok(
        requests.slice(asked).every((request) => request.startsWith("blob:")),
        "no API request",
      );

      // A location picked on the map: its own yearly trend, from its own $apply.
      const dot = page.locator("#map circle.location").last();
      const id = Number(await dot.getAttribute("data-id"));
      await dot.click();
      await page.waitForSelector("#location-trend[data-points]");
      const locationYears = await yearlyMeans(id);
      assert.ok(locationYears.length > 0);
      assert.equal(
        Number(await page.getAttribute("#location-trend", "data-points")),
        locationYears.length,
      );
      assert.equal(
        await page.locator("#location-trend circle.point").count(),
        locationYears.length,
      );
      // The summaries are one request each, never rows: per location, per dataset, the selection's trend, the location's.
      const applied = requests.filter((request) => request.includes("$apply="));
      assert.equal(applied.length, 4, applied.join("\n"));
      assert.equal(
        applied.filter((request) =>
          new URL(request).searchParams.get("$apply")?.includes(`LocationId eq ${id}`)
        ).length,
        1,
      );
      await saveScreenshot(page, "explorer-summary-desktop");
      // Narrowed to a phone's width, the trends are drawn again at it, their labels as large.
      await page.setViewportSize(VIEWPORTS.phone);
      await page.waitForFunction(() =>
        ["#trend", "#location-trend"].every((selector) => {
          const plot = (globalThis as unknown as PageGlobals).document.querySelector(
            selector,
          ) as unknown as DrawingGlobals;
          return plot.getAttribute("viewBox")?.split(" ")[2] ===
            String(Math.round(plot.getBoundingClientRect().width));
        })
      );
      const labels = await page.evaluate<number[]>(
        `[...document.querySelectorAll("#trend text, #location-trend text")].map((text) => parseFloat(getComputedStyle(text).fontSize) * text.getScreenCTM().a)`,
      );
      assert.ok(labels.length > 0 && Math.min(...labels) >= 11, JSON.stringify(labels));
      await assertNoSidewaysScroll(page);
      assert.deepEqual([...new Set(traffic.statuses)], [200]);
      assert.equal(traffic.mostInFlight(), 1);
      assertQuiet(opened, url);
    });
  });

  it("plots the trends per month when the period is switched, one $apply each, and per year again", async () => {
    const context = await browser.newContext({ viewport: VIEWPORTS.desktop });
    try {
      const { page, requests, errors, traffic } = await openExplorer(
        context,
        url,
        `#region=${REGION}&characteristic=${CHARACTERISTIC}`,
      );
      await summarisedFilter(page, FILTER);
      const dot = page.locator("#map circle.location").last();
      const id = Number(await dot.getAttribute("data-id"));
      await dot.click();
      await page.waitForSelector("#location-trend[data-points]");
      await traffic.settled();
      const asked = requests.length;
      const [months, locationMonths] = [await monthlyMeans(), await monthlyMeans(id)];
      assert.ok(months.length > (await yearlyMeans()).length, `${months.length} months`);
      await page.selectOption("#trend-period", "month");
      await described(
        page,
        "#trend",
        `${months.length} monthly means of mean pH, the whole selection`,
      );
      await described(
        page,
        "#location-trend",
        `${locationMonths.length} monthly means of mean pH at`,
      );
      assert.equal(Number(await page.getAttribute("#trend", "data-points")), months.length);
      assert.equal(
        await page.locator("#location-trend circle.point").count(),
        locationMonths.length,
      );
      // A point a month, in time order, higher for a higher mean.
      const points = await page.locator("#trend circle.point").evaluateAll((circles) =>
        circles.map((
          circle,
        ) => [Number(circle.getAttribute("cx")), Number(circle.getAttribute("cy"))])
      );
      assert.deepEqual(points.map(([x]) => x), points.map(([x]) => x).sort((a, b) => a! - b!));
      for (let i = 1; i < months.length; i++) {
        const [before, now] = [months[i - 1]!.Mean, months[i]!.Mean];
        if (before !== now) {
          assert.equal(points[i]![1]! < points[i - 1]![1]!, now > before, `month ${i}`);
        }
      }
      assert.match(await page.textContent("#trend-note") ?? "", /, per month: \d+ months, /);
      // Two requests, each the monthly $apply; the URL shown is the selection's.
      await traffic.settled();
      const applied = requests.slice(asked).filter((request) => request.includes("$apply="));
      assert.equal(applied.length, 2, applied.join("\n"));
      for (const request of applied) {
        assert.match(
          new URL(request).searchParams.get("$apply") ?? "",
          /compute\(year\(ActivityStartDate\) as Year, month\(ActivityStartDate\) as Month\)\/groupby\(\(Year,Month\), /,
        );
      }
      const shownTrend = await page.textContent("#trend-url");
      assert.ok(applied.includes(shownTrend!), shownTrend ?? "");
      await saveScreenshot(page, "explorer-monthly-desktop");
      // Back to years.
      await page.selectOption("#trend-period", "year");
      const years = await yearlyMeans();
      await described(
        page,
        "#trend",
        `${years.length} yearly means of mean pH, the whole selection`,
      );
      await described(page, "#location-trend", `${(await yearlyMeans(id)).length} yearly means`);
      await traffic.settled();
      assert.deepEqual(traffic.refused, []);
      assert.equal(traffic.mostInFlight(), 1);
      assert.deepEqual(errors, []);
    } finally {
      await context.close();
    }
  });

  it("on a 390-px phone: labels of 11 px and more, every column of the table in reach, the map's layers under its locations", async () => {
    await inContext(browser, PHONE, async (context) => {
      const opened = await openExplorer(
        context,
        url,
        `#region=${REGION}&characteristic=${CHARACTERISTIC}`,
      );
      const { page, traffic } = opened;
      await shownFilter(page, FILTER);
      await page.waitForSelector("#map .basemap path.land");
      await page.locator("#map circle.location").last().tap();
      await page.waitForSelector("#series[data-points]");
      // The yearly trends: the selection's, and the tapped location's.
      await page.waitForSelector("#trend[data-points]");
      await page.waitForSelector("#location-trend[data-points]");
      // The Atlantic region's locations, on a phone: the Maritimes, no country border in view.
      assertMap(await page.evaluate<MapReport>(MAP_REPORT), [
        "land",
        "lakes",
        "rivers",
        "provinces",
      ]);
      const sizes = await page.evaluate<Record<string, number[]>>(LABEL_SIZES);
      for (const [drawing, labels] of Object.entries(sizes)) {
        assert.ok(labels.length > 0, `${drawing} has labels`);
        assert.ok(Math.min(...labels) >= 11, `${drawing}: ${JSON.stringify(labels)}`);
      }
      // The table scrolls sideways in its own box, never the page; every column shows whole at one end or the other.
      assert.deepEqual(await page.evaluate<Record<string, boolean>>(TABLE_REACH), {
        Id: true,
        Date: true,
        Time: true,
        Location: true,
        Characteristic: true,
        Value: true,
        Unit: true,
      });
      await assertNoSidewaysScroll(page);
      await saveScreenshot(page, "explorer-phone");
      assert.deepEqual([...new Set(traffic.statuses)], [200]);
      assert.equal(traffic.mostInFlight(), 1);
      assertQuiet(opened, url);
    });
  });

  it("builds filters, URLs, retries, pacing, projections, map shapes, units and ticks as the page's own functions, run in the browser", async () => {
    await inContext(browser, {}, async (context) => {
      const page = await context.newPage();
      await page.goto(`${url}/`);
      const results = await page.evaluate(async (origin) => {
        // The page's modules, as the page loaded them (the same instances): their pure functions are exported.
        const paths = [
          "/explorer/query.js",
          "/explorer/map.js",
          "/explorer/plot.js",
          "/explorer/summary.js",
          "/explorer/api_client.js",
        ];
        const m = Object.assign(
          {},
          ...(await Promise.all(paths.map((path) => import(path)))),
        ) as Record<string, (...args: unknown[]) => unknown>;
        const none = { dataset: "", region: "", characteristic: "", from: "", to: "" };
        const view = m["fitView"]!(
          [{ longitude: -66, latitude: 44 }, { longitude: -60, latitude: 47 }],
          800,
          500,
        ) as { width: number; height: number };
        const tiles = m["coveringTiles"]!(view) as {
          z: number;
          left: number;
          top: number;
          size: number;
        }[];
        const round = m["unproject"]!(m["mercator"]!(-63.5, 44.6)) as {
          longitude: number;
          latitude: number;
        };
        return {
          quoted: m["odataString"]!("O'Brien"),
          all: m["buildFilter"]!({
            dataset: "10.25976/ab-1",
            region: "hub.atlantic",
            characteristic: "Temperature, water",
            from: "2019-01-01",
            to: "2019-12-31",
          }),
          one: m["buildFilter"]!({ ...none, characteristic: "pH" }, 7),
          nothing: m["buildFilter"]!({ ...none, from: "2019-1-1" }),
          summaryOfAll: m["summaryApply"]!(none),
          perDataset: m["datasetSummaryApply"]!({ ...none, region: "hub.atlantic" }),
          table: (m["summaryTable"]!(
            [{ DOI: "b", Count: 3, Mean: 2, Low: 1, High: 3 }, {
              DOI: "a",
              Count: 1,
              Mean: 5,
              Low: 5,
              High: 5,
            }],
            [
              { DOI: "b", LocationId: 9, Count: 1, Mean: 1, Low: 1, High: 1 },
              { DOI: "a", LocationId: 4, Count: 1, Mean: 5, Low: 5, High: 5 },
              { DOI: "b", LocationId: 2, Count: 2, Mean: 2.5, Low: 2, High: 3 },
            ],
            (doi: string) => `Dataset ${doi.toUpperCase()}`,
            (id: number) => (id === 9 ? "Bay" : "Cove"),
          ) as { DOI: string; LocationId: number | null; location: string }[]).map((row) =>
            `${row.DOI}:${row.LocationId ?? "-"}:${row.location}`
          ),
          trendOfOne: m["trendApply"]!({ ...none, characteristic: "pH" }, 7),
          trendPerMonth: m["trendApply"]!({ ...none, characteristic: "pH" }, undefined, "month"),
          colours: [[1, 1, 3], [3, 1, 3], [2, 1, 3], [1.5, 1, 3], [5, 5, 5], [9, 1, 3]].map((
            [value, low, high],
          ) => m["meanColour"]!(value, low, high)),
          summaryCsv: m["summaryCsv"]!([{
            DOI: "10.25976/ab-1",
            dataset: "Lakes",
            LocationId: null,
            location: "All locations",
            Count: 2,
            Mean: 7,
            Low: 1,
            High: null,
            Units: 2,
            Unit: "deg C",
          }, {
            DOI: "10.25976/ab-1",
            dataset: 'Lakes, "big"',
            LocationId: 7,
            location: "A",
            Count: 2,
            Mean: 7.123456789,
            Low: 1,
            High: null,
            Units: 1,
            Unit: "mg/L",
          }]),
          // Units: the one of the most readings among groups of one; a tooltip with its unit, none for "None", no mean for several.
          mainUnits: [
            [{ Units: 1, Unit: "mg/L", Count: 3 }, { Units: 1, Unit: "ug/L", Count: 2 }, {
              Units: 1,
              Unit: "ug/L",
              Count: 2,
            }, { Units: 2, Unit: "mg/L", Count: 9 }],
            [{ Units: 2, Unit: "mg/L", Count: 9 }],
            [{ Units: 0, Unit: null, Count: 4 }],
          ].map((rows) => {
            const unit = m["mainUnit"]!(rows);
            return unit === undefined ? "none" : unit;
          }),
          titles: [
            { Count: 2, Mean: 7.5, Low: 7, High: 8, Units: 1, Unit: "mg/L" },
            { Count: 1, Mean: 7, Low: 7, High: 7, Units: 1, Unit: "None" },
            { Count: 5, Mean: 30, Low: 1, High: 90, Units: 2, Unit: "deg C" },
          ].map((row) => m["summaryTitle"]!("Lake A", 3, row)),
          query: m["queryString"]!([["$filter", "Name eq 'a b'"], ["$select", "Id,Name"], [
            "$top",
            "",
          ]]),
          shell: m["shellQuote"]!("it's"),
          same: m["followLink"]!(`${origin}/v1/odata/v4/Locations?$skiptoken=Id:9`, origin),
          other: m["followLink"]!("https://elsewhere.example/v1/odata/v4/Locations", origin) ??
            null,
          retries: [
            m["retryDelayMs"]!(429, "3", 1),
            m["retryDelayMs"]!(503, null, 1),
            m["retryDelayMs"]!(500, "1", 1) ?? null,
            m["retryDelayMs"]!(429, "1", 6) ?? null,
          ],
          centre: m["mercator"]!(0, 0),
          round: [Number(round.longitude.toFixed(9)), Number(round.latitude.toFixed(9))],
          ticks: m["niceTicks"]!(6.9, 8.6, 5),
          years:
            (m["timeTicks"]!(Date.UTC(2012, 0, 15), Date.UTC(2024, 5, 1), 6) as { label: string }[])
              .map((tick) => tick.label),
          months:
            (m["timeTicks"]!(Date.UTC(2020, 0, 10), Date.UTC(2020, 9, 1), 6) as { label: string }[])
              .map((tick) => tick.label),
          tile: m["tileUrl"]!("https://t.example/{z}/{x}/{y}.png", { z: 3, x: 2, y: 1 }),
          covered: tiles.length > 0 && Math.min(...tiles.map((t) => t.left)) <= 0 &&
            Math.min(...tiles.map((t) => t.top)) <= 0 &&
            Math.max(...tiles.map((t) => t.left + t.size)) >= view.width &&
            Math.max(...tiles.map((t) => t.top + t.size)) >= view.height,
          tileSizes: [...new Set(tiles.map((t) => t.size >= 256 && t.size < 512))],
          // Pacing: the contract's headers, a policy of several, the rate from Limit/Remaining/Reset without one, nothing.
          rates: [
            m["readRateLimit"]!(
              new Headers({
                "ratelimit-policy": "250;w=125",
                "ratelimit-remaining": "0",
                "ratelimit-limit": "250",
                "ratelimit-reset": "125",
              }),
              1000,
            ),
            m["readRateLimit"]!(
              new Headers({ "ratelimit-policy": "10;w=1, 100;w=3600", "ratelimit-remaining": "7" }),
              5,
            ),
            m["readRateLimit"]!(
              new Headers({
                "ratelimit-limit": "10",
                "ratelimit-remaining": "0",
                "ratelimit-reset": "5",
              }),
              5,
            ),
            m["readRateLimit"]!(new Headers({ "ratelimit-policy": "250;w=125" }), 5) ?? null,
            m["readRateLimit"]!(new Headers({}), 5) ?? null,
          ],
          delays: [
            m["rateDelayMs"]!(undefined, 0),
            m["rateDelayMs"]!({ limit: 250, windowSeconds: 125, remaining: 3, at: 1000 }, 1000),
            m["rateDelayMs"]!({ limit: 250, windowSeconds: 125, remaining: 0, at: 1000 }, 1000),
            m["rateDelayMs"]!({ limit: 250, windowSeconds: 125, remaining: 0, at: 1000 }, 1200),
            m["rateDelayMs"]!({ limit: 250, windowSeconds: 125, remaining: 0, at: 1000 }, 1600),
          ],
          units: ["None", "none", " mg/L ", "", null].map((unit) => m["displayUnit"]!(unit)),
          // A square half out of the drawing's left side, cut at it; a line crossing it twice, in two runs.
          ring: m["clipRing"]!([-10, 10, 10, 10, 10, 20, -10, 20], {
            left: 0,
            top: 0,
            right: 100,
            bottom: 100,
          }),
          runs: (m["clipLine"]!([-10, 5, 10, 5, 10, 150, 20, 50, 30, 50], {
            left: 0,
            top: 0,
            right: 100,
            bottom: 100,
          }) as number[][])
            .map((run) => run.map((value) => Number(value.toFixed(6)))),
          basemap: (() => {
            const layers = m["readBasemap"]!({
              unitsPerDegree: 100,
              layers: [
                { name: "land", kind: "area", shapes: [[-6600, 4400, 600, 0, 0, 300, -600, 0]] },
                { name: "far", kind: "line", shapes: [[10000, -4000, 100, 100]] },
              ],
            }) as { name: string; shapes: { minX: number; maxX: number }[] }[];
            const paths = layers.map((layer) => m["layerPath"]!(layer, view) as string);
            // The land's path, drawn: its box is the square's corners on the drawing.
            const page = (globalThis as unknown as { document: PathDocument }).document;
            const path = page.createElementNS("http://www.w3.org/2000/svg", "path");
            path.setAttribute("d", paths[0]!);
            page.querySelector("#map")!.append(path);
            const box = path.getBBox();
            path.remove();
            const [topLeft, bottomRight] = [[-66, 47], [-60, 44]].map(([longitude, latitude]) =>
              m["toPixels"]!(view, m["mercator"]!(longitude, latitude)) as { x: number; y: number }
            );
            const off = [
              box.x - topLeft!.x,
              box.y - topLeft!.y,
              box.x + box.width - bottomRight!.x,
              box.y + box.height - bottomRight!.y,
            ];
            return {
              names: layers.map((layer) => layer.name),
              bounds: layers[0]!.shapes.map((
                shape,
              ) => [Number(shape.minX.toFixed(6)), Number(shape.maxX.toFixed(6))]),
              land: /^M[^Z]+Z$/.test(paths[0]!) && Math.max(...off.map(Math.abs)) <= 0.1,
              far: paths[1],
            };
          })(),
          refused: [{ layers: [] }, {
            unitsPerDegree: 100,
            layers: [{ name: "land", kind: "blob", shapes: [] }],
          }, { unitsPerDegree: 100, layers: [{ name: "land", kind: "area", shapes: [[1, 2, 3]] }] }]
            .map((file) => {
              try {
                m["readBasemap"]!(file);
                return "read";
              } catch (error) {
                return (error as Error).name;
              }
            }),
        };
      }, url);
      assert.deepEqual(results, {
        quoted: "'O''Brien'",
        all:
          "DOI eq '10.25976/ab-1' and RegionId eq 'hub.atlantic' and CharacteristicName eq 'Temperature, water' and ActivityStartDate ge 2019-01-01 and ActivityStartDate le 2019-12-31",
        one: "LocationId eq 7 and CharacteristicName eq 'pH'",
        nothing: "",
        summaryOfAll:
          "filter(ResultValue ne null)/groupby((DOI,LocationId), aggregate($count as Count, ResultValue with average as Mean, ResultValue with min as Low, ResultValue with max as High, ResultUnit with countdistinct as Units, ResultUnit with min as Unit))",
        trendOfOne:
          "filter(LocationId eq 7 and CharacteristicName eq 'pH' and ResultValue ne null)/compute(year(ActivityStartDate) as Year)/groupby((Year), aggregate($count as Count, ResultValue with average as Mean, ResultValue with min as Low, ResultValue with max as High, ResultUnit with countdistinct as Units, ResultUnit with min as Unit))",
        trendPerMonth:
          "filter(CharacteristicName eq 'pH' and ResultValue ne null)/compute(year(ActivityStartDate) as Year, month(ActivityStartDate) as Month)/groupby((Year,Month), aggregate($count as Count, ResultValue with average as Mean, ResultValue with min as Low, ResultValue with max as High, ResultUnit with countdistinct as Units, ResultUnit with min as Unit))",
        // The palette's ends and middle; a quarter of the way, between its first two colours; all equal, the middle; beyond, the end.
        colours: ["#440154", "#fde725", "#21918c", "#3b528b", "#21918c", "#fde725"],
        perDataset:
          "filter(RegionId eq 'hub.atlantic' and ResultValue ne null)/groupby((DOI), aggregate($count as Count, ResultValue with average as Mean, ResultValue with min as Low, ResultValue with max as High, ResultUnit with countdistinct as Units, ResultUnit with min as Unit))",
        // Each dataset's row (by name), then its locations' (by name, then id).
        table: ["a:-:All locations", "a:4:Cove", "b:-:All locations", "b:9:Bay", "b:2:Cove"],
        summaryCsv:
          'DOI,Dataset,LocationId,Location,Count,Unit,Mean,Min,Max\r\n10.25976/ab-1,Lakes,,All locations,2,2 units,,,\r\n10.25976/ab-1,"Lakes, ""big""",7,A,2,mg/L,7.12346,1,\r\n',
        mainUnits: ["ug/L", "none", null],
        titles: [
          "Lake A (location 3): mean 7.5 mg/L, 2 readings, range 7–8 mg/L",
          "Lake A (location 3): mean 7, 1 reading, range 7–7",
          "Lake A (location 3): 5 readings in 2 units",
        ],
        query: "?$filter=Name%20eq%20%27a%20b%27&$select=Id,Name",
        shell: "'it'\\''s'",
        same: "/v1/odata/v4/Locations?$skiptoken=Id:9",
        other: null,
        retries: [3000, 1000, null, null],
        centre: { x: 0.5, y: 0.5 },
        round: [-63.5, 44.6],
        ticks: [7, 7.5, 8, 8.5],
        years: ["2015", "2020"],
        months: ["2020-04", "2020-07", "2020-10"],
        tile: "https://t.example/3/2/1.png",
        covered: true,
        tileSizes: [true],
        rates: [
          { limit: 250, windowSeconds: 125, remaining: 0, at: 1000 },
          { limit: 100, windowSeconds: 3600, remaining: 7, at: 5 },
          { limit: 10, windowSeconds: 5, remaining: 0, at: 5 },
          null,
          null,
        ],
        delays: [0, 0, 500, 300, 0],
        units: ["", "", "mg/L", "", ""],
        ring: [0, 10, 10, 10, 10, 20, 0, 20],
        runs: [[0, 5, 10, 5, 10, 100], [15, 100, 20, 50, 30, 50]],
        basemap: {
          names: ["land", "far"],
          bounds: [[Number(((180 - 66) / 360).toFixed(6)), Number(((180 - 60) / 360).toFixed(6))]],
          land: true,
          far: "",
        },
        refused: ["TypeError", "TypeError", "TypeError"],
      });
    });
  });

  it("waits out the API's 429 as Retry-After asks, then shows the selection", async () => {
    await inContext(browser, { viewport: VIEWPORTS.desktop }, async (context) => {
      const page = await context.newPage();
      // The first count the page asks for is refused as a rate-limited API refuses it; the rest go through.
      let refused = 0;
      await page.route(
        (target) =>
          target.pathname === `${API}/Observations` && target.searchParams.get("$count") === "true",
        async (route) => {
          if (refused++ === 0) {
            await route.fulfill({
              status: 429,
              headers: { "retry-after": "1", "content-type": "application/json" },
              body:
                '{"error":{"code":"ERR_HTTP_RATE_LIMITED","message":"Cannot accept the request now"}}',
            });
          } else {
            await route.continue();
          }
        },
      );
      await page.addInitScript(GIVE_KEY);
      await page.goto(`${url}/`);
      await textStarts(page, "#status", "Waiting 1 s");
      await shownFilter(page, "");
      assert.equal(refused, 2, "asked again after the refusal");
      assert.equal(digits(await page.textContent("#count")), await count("Observations", "true"));
    });
  });

  it("shows no summary, and why, when the API refuses one of its $apply requests, and the rest of the page as ever", async () => {
    await inContext(browser, { viewport: VIEWPORTS.desktop }, async (context) => {
      const page = await context.newPage();
      // The summary per dataset is refused as the API refuses a bad $apply; the one per location (asked before it) goes through.
      let refused = 0;
      await page.route(
        (target) =>
          target.pathname === `${API}/Observations` &&
          (target.searchParams.get("$apply") ?? "").includes("groupby((DOI),"),
        async (route) => {
          refused++;
          await route.fulfill({
            status: 400,
            headers: { "content-type": "application/json" },
            body:
              '{"error":{"code":"ERR_ODATA_UNSUPPORTED","message":"Cannot apply this (the test refuses it)"}}',
          });
        },
      );
      await page.addInitScript(GIVE_KEY);
      await page.goto(`${url}/#region=${REGION}&characteristic=${CHARACTERISTIC}`);
      await summarisedFilter(page, FILTER);
      assert.equal(refused, 1);
      assert.equal(
        await page.textContent("#summary-note"),
        "Cannot summarise pH: Cannot apply this (the test refuses it)",
      );
      // No half summary: no colour on the map, no legend, no rows, no CSV link, no trend.
      assert.equal(await page.locator("#map circle.location[fill]").count(), 0);
      assert.ok(await page.locator("#map circle.location").count() > 1);
      assert.equal(await page.isVisible("#map-legend"), false);
      assert.equal(await page.locator("#summary-rows tr").count(), 0);
      assert.equal(await page.isVisible("#summary-csv"), false);
      assert.equal(await page.isVisible("#trend"), false);
      // The status and the series are as ever.
      assert.equal(
        await page.textContent("#status"),
        `${await page.textContent("#count")} observations at ${await page.textContent(
          "#location-count",
        )} locations.`,
      );
      await page.locator("#map circle.location").last().click();
      await page.waitForSelector("#series[data-points]");
    });
  });

  it("asks again for a key the API refuses", async () => {
    await inContext(browser, { viewport: VIEWPORTS.desktop }, async (context) => {
      const page = await context.newPage();
      await page.goto(`${url}/`);
      await page.fill("#api-key", "not-a-key");
      await page.click("#key-form button[type=submit]");
      await textStarts(page, "#status", "The API refused the key (403)");
      assert.equal(await page.evaluate<string>(`document.activeElement.id`), "api-key");
      assert.equal(
        await page.evaluate<string | null>(`sessionStorage.getItem("tributary.explorer.key")`),
        null,
        "the refused key is forgotten",
      );
    });
  });
});

/** A PNG of one transparent pixel: what the test's tile server answers for every tile. */
const PIXEL = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=",
  "base64",
);

describe("the explorer with MAP_TILE_URL, in headless Chromium", { skip: browserSkip }, () => {
  let server = "";
  let browser: Browser;
  let tiles: Server;
  let tileOrigin = "";
  const tilePaths: string[] = [];
  const data = mkdtempSync(join(tmpdir(), "tributary-explorer-"));

  before(async () => {
    // A tile server on another origin (another port of the loopback), and one small dataset, for a quick start.
    tiles = createServer((request, response) => {
      tilePaths.push(request.url ?? "");
      response.writeHead(200, { "content-type": "image/png", "content-length": PIXEL.length }).end(
        PIXEL,
      );
    });
    await new Promise<void>((resolve) => tiles.listen(0, "127.0.0.1", resolve));
    tileOrigin = `http://127.0.0.1:${(tiles.address() as AddressInfo).port}`;
    cpSync(
      join(import.meta.dirname, "..", "..", "data", "datasets", "qu-appelle-valley-lakes"),
      join(data, "qu-appelle-valley-lakes"),
      { recursive: true },
    );
    const started = startServer({
      SERVICES: "water",
      DATA_DIR: data,
      API_KEYS_FILE: keysFile(),
      MAP_TILE_URL: `${tileOrigin}/tiles/{z}/{x}/{y}.png`,
      MAP_TILE_ATTRIBUTION: "Tiles from the test's own server",
    });
    [server, browser] = await Promise.all([listeningUrl(started), launchBrowser()]);
  });

  after(async () => {
    await browser?.close();
    tiles?.close();
    rmSync(data, { recursive: true, force: true });
  });

  it("draws the tile server's tiles under the locations, allowed by the policy, and asks no other origin", async () => {
    await inContext(browser, { viewport: VIEWPORTS.desktop }, async (context) => {
      const opened = await openExplorer(context, server);
      const { page, requests, traffic } = opened;
      const csp = parseCsp(
        (await page.request.get(`${server}/`)).headers()["content-security-policy"] ?? "",
      );
      assert.deepEqual(csp.get("img-src"), ["'self'", "data:", tileOrigin]);
      assert.deepEqual(csp.get("connect-src"), ["'self'", tileOrigin]);
      await shownFilter(page, "");
      const images = await page.locator("#map image").count();
      assert.ok(images > 0, "tiles drawn");
      await page.waitForLoadState("networkidle");
      assert.equal(new Set(tilePaths).size, images, "each tile asked for once");
      for (const path of tilePaths) assert.match(path, /^\/tiles\/\d+\/\d+\/\d+\.png$/);
      const locations = await fetch(`${server}${API}/Locations/$count`, {
        headers: { "x-api-key": CHECK_KEY },
      });
      assert.equal(
        await page.locator("#map circle.location").count(),
        Number(await locations.text()),
      );
      // The tiles cover the basemap (drawn for when they cannot load) and lie under the graticule and the locations.
      assert.deepEqual(
        await page.evaluate<string[]>(
          `[...document.querySelector("#map").children].map((child) => child.getAttribute("class") ?? child.tagName)`,
        ),
        ["desc", "sea", "basemap", "tiles", "graticule", "locations"],
      );
      assert.equal(await page.textContent("#attribution"), "Tiles from the test's own server");
      assert.equal(await page.isVisible("#attribution"), true);
      assert.ok(requests.some((request) => request.startsWith(`${tileOrigin}/tiles/`)));
      assert.deepEqual([...new Set(traffic.statuses)], [200]);
      assertQuiet(opened, server, [tileOrigin]);
      await saveScreenshot(page, "explorer-tiles-desktop");
    });
  });
});

describe("the explorer under a burst of 2 (RATE_LIMIT_BURST=2), in headless Chromium", {
  skip: browserSkip,
}, () => {
  let server = "";
  let browser: Browser;
  const data = mkdtempSync(join(tmpdir(), "tributary-explorer-"));

  before(async () => {
    // One small dataset; the bucket of two requests refilling at the default two a second, so that the page must pace itself.
    cpSync(
      join(import.meta.dirname, "..", "..", "data", "datasets", "qu-appelle-valley-lakes"),
      join(data, "qu-appelle-valley-lakes"),
      { recursive: true },
    );
    const started = startServer({
      SERVICES: "water",
      DATA_DIR: data,
      API_KEYS_FILE: keysFile(),
      RATE_LIMIT_BURST: "2",
    });
    [server, browser] = await Promise.all([listeningUrl(started), launchBrowser()]);
  });

  after(async () => {
    await browser?.close();
    rmSync(data, { recursive: true, force: true });
  });

  it("paces itself by the RateLimit headers over a load, a characteristic change, a map click, a table page and a reload, meeting no 429", async () => {
    await inContext(browser, { viewport: VIEWPORTS.desktop }, async (context) => {
      const opened = await openExplorer(context, server);
      const { page, traffic } = opened;
      await shownFilter(page, "");
      await page.fill("#characteristic", CHARACTERISTIC);
      await page.press("#characteristic", "Enter");
      const filter = `CharacteristicName eq '${CHARACTERISTIC}'`;
      await shownFilter(page, filter);
      await page.locator("#map circle.location").last().click();
      await page.waitForSelector("#series[data-points]");
      const first = await page.textContent("#observations tbody td");
      await page.click("#next");
      await page.waitForFunction(
        (before) =>
          (globalThis as unknown as PageGlobals).document.querySelector("#observations tbody td")
            ?.textContent !== before,
        first,
      );
      // What the page read of the key's limit, kept in the tab for a load again: the server's policy, a bucket of 2 refilled in a second.
      const kept = JSON.parse(
        await page.evaluate<string>(`sessionStorage.getItem("tributary.explorer.rate")`),
      ) as Record<string, number>;
      assert.deepEqual([kept["limit"], kept["windowSeconds"]], [2, 1]);
      // A reload cuts off a request the page has not read yet, and the server counts it (the
      // key's one at a time) until it has answered it: a reload then would meet a 429 for
      // concurrency, which the page waits out. So the page first finishes what it asks: the
      // characteristic's summaries, and every request in flight.
      await summarisedFilter(page, filter);
      await traffic.settled();
      await page.reload();
      await shownFilter(page, filter);
      assert.ok(
        traffic.statuses.length >= 12,
        `${traffic.statuses.length} answers, more than the burst`,
      );
      assert.deepEqual(traffic.refused, []);
      assert.deepEqual([...new Set(traffic.statuses)], [200]);
      assert.equal(traffic.mostInFlight(), 1);
      assertQuiet(opened, server);
    });
  });
});

describe("the explorer on a characteristic measured in two units, in headless Chromium", {
  skip: browserSkip,
}, () => {
  let server = "";
  let browser: Browser;
  const data = mkdtempSync(join(tmpdir(), "tributary-explorer-"));
  const NAME = "Phosphorus, total";
  const UNITS_FILTER = `CharacteristicName eq '${NAME}'`;
  /** Readings: [location, date, value, unit]. Mixed Lake has both units; Micro Pond only µg/L. */
  const READINGS = [
    ["MIX", "Mixed Lake", "2019-06-03", 0.02, "mg/L"],
    ["MIX", "Mixed Lake", "2019-07-03", 0.03, "mg/L"],
    ["MIX", "Mixed Lake", "2020-06-03", 25, "µg/L"],
    ["MIX", "Mixed Lake", "2020-07-03", 35, "µg/L"],
    ["MILLI", "Milli Creek", "2018-06-03", 0.06, "mg/L"],
    ["MILLI", "Milli Creek", "2019-06-04", 0.04, "mg/L"],
    ["MILLI", "Milli Creek", "2020-06-04", 0.05, "mg/L"],
    ["MILLI", "Milli Creek", "2020-08-04", 0.07, "mg/L"],
    ["MICRO", "Micro Pond", "2020-06-05", 40, "µg/L"],
    ["BAY", "Milli Bay", "2019-08-05", 0.01, "mg/L"],
  ] as const;

  before(async () => {
    // One small dataset of the test's own, in a folder as DATA_DIR holds them.
    const folder = join(data, "two-units");
    mkdirSync(folder);
    const metadata = JSON.parse(
      await readFile(
        join(
          import.meta.dirname,
          "..",
          "..",
          "data",
          "datasets",
          "qu-appelle-valley-lakes",
          "metadata.json",
        ),
        "utf8",
      ),
    ) as Record<string, unknown>;
    writeFileSync(
      join(folder, "metadata.json"),
      JSON.stringify({
        ...metadata,
        Id: "8b0c7d4e-5f1a-4c2b-9d3e-2a1b0c9d8e7f",
        DOI: "10.25976/unit-s002",
        DatasetName: "Two Units",
        Citation: "Two Units (dataset).",
      }),
    );
    const places = new Map([["MIX", 0], ["MILLI", 1], ["MICRO", 2], ["BAY", 3]]);
    writeFileSync(
      join(folder, "data.csv"),
      [
        FIXTURE_HEADER.join(","),
        ...READINGS.map(([id, name, date, value, unit]) =>
          fixtureRow({
            DatasetName: "Two Units",
            MonitoringLocationID: id,
            MonitoringLocationName: name,
            MonitoringLocationLatitude: 50.5 + places.get(id)! / 10,
            MonitoringLocationLongitude: -103 + places.get(id)! / 10,
            ActivityStartDate: date,
            CharacteristicName: NAME,
            ResultValue: value,
            ResultUnit: unit,
          })
        ),
      ].join("\n") + "\n",
    );
    const started = startServer({ SERVICES: "water", DATA_DIR: data, API_KEYS_FILE: keysFile() });
    [server, browser] = await Promise.all([listeningUrl(started), launchBrowser()]);
    // The test's own API checks (api()) ask this server from now on.
    url = server;
  });

  after(async () => {
    await browser?.close();
    rmSync(data, { recursive: true, force: true });
  });

  it("answers the API grouped by unit, one row a unit, and never shows a mean across units", async () => {
    // The API: grouped by unit, each unit's readings apart; by characteristic alone, the count of units says they mix.
    const byUnit = ((await (await api(
      `Observations?$apply=${
        encodeURIComponent(
          `filter(${UNITS_FILTER})/groupby((ResultUnit), aggregate($count as N, ResultValue with average as Mean))`,
        )
      }`,
    )).json()) as { value: { ResultUnit: string; N: number; Mean: number }[] }).value;
    const milli = READINGS.filter((r) => r[4] === "mg/L").map((r) => r[3] as number);
    const micro = READINGS.filter((r) => r[4] === "µg/L").map((r) => r[3] as number);
    const mean = (values: readonly number[]): number =>
      values.reduce((a, b) => a + b, 0) / values.length;
    assert.deepEqual(byUnit.map((row) => [row.ResultUnit, row.N]), [
      ["mg/L", milli.length],
      ["µg/L", micro.length],
    ]);
    assert.ok(Math.abs(byUnit[0]!.Mean - mean(milli)) < 1e-15);
    assert.ok(Math.abs(byUnit[1]!.Mean - mean(micro)) < 1e-12);
    const [whole] = ((await (await api(
      `Observations?$apply=${
        encodeURIComponent(
          `filter(${UNITS_FILTER})/groupby((CharacteristicName), aggregate(ResultUnit with countdistinct as Units))`,
        )
      }`,
    )).json()) as { value: { Units: number }[] }).value;
    assert.equal(whole!.Units, 2);

    const context = await browser.newContext({ viewport: VIEWPORTS.desktop });
    try {
      const { page, errors, traffic } = await openExplorer(
        context,
        server,
        `#characteristic=${encodeURIComponent(NAME)}`,
      );
      await summarisedFilter(page, UNITS_FILTER);
      // The map: coloured in the unit of the most readings (mg/L), the others uncoloured.
      const dots = new Map(
        (await page.evaluate<{ name: string; fill: string | null; title: string }[]>(
          `[...document.querySelectorAll("#map circle.location")].map((dot) => ({
            name: dot.querySelector("title").textContent.replace(/ \\(location \\d+\\).*/, ""),
            fill: dot.getAttribute("fill"), title: dot.querySelector("title").textContent,
          }))`,
        )).map((dot) => [dot.name, dot]),
      );
      assert.deepEqual([...dots.keys()].sort(), [
        "Micro Pond",
        "Milli Bay",
        "Milli Creek",
        "Mixed Lake",
      ]);
      assert.match(dots.get("Milli Creek")!.fill ?? "", /^#[0-9a-f]{6}$/);
      assert.match(
        dots.get("Milli Creek")!.title,
        /: mean 0\.055 mg\/L, 4 readings, range 0\.04–0\.07 mg\/L$/,
      );
      assert.match(dots.get("Milli Bay")!.fill ?? "", /^#[0-9a-f]{6}$/);
      assert.equal(dots.get("Mixed Lake")!.fill, null);
      assert.equal(dots.get("Micro Pond")!.fill, null);
      assert.equal(await page.textContent("#legend-what"), `Mean ${NAME} per location (mg/L):`);
      assert.equal(await page.textContent("#legend-low"), "0.01");
      assert.equal(await page.textContent("#legend-high"), "0.055");
      // The table: no mean, min or max for the dataset or a location in two units.
      const table = await page.locator("#summary-rows tr").evaluateAll((rows) =>
        rows.map((row) => [...row.querySelectorAll("td")].map((cell) => cell.textContent))
      );
      const rowOf = (location: string): (string | null)[] =>
        table.find((cells) => cells[1]?.startsWith(location) === true)!;
      assert.deepEqual(rowOf("All locations").slice(2), ["10", "2 units", "", "", ""]);
      assert.deepEqual(rowOf("Mixed Lake").slice(2), ["4", "2 units", "", "", ""]);
      assert.deepEqual(rowOf("Micro Pond").slice(2), ["1", "µg/L", "40", "40", "40"]);
      assert.deepEqual(rowOf("Milli Creek").slice(2), ["4", "mg/L", "0.055", "0.04", "0.07"]);
      // The trend: 2018 and 2019 in mg/L; 2020, in both units, left out.
      await page.waitForSelector("#trend[data-points]");
      assert.equal(await page.getAttribute("#trend", "data-points"), "2");
      assert.equal(
        await page.textContent("#trend-note"),
        `Mean of ${NAME}, the whole selection, per year: 2 years, 5 readings; 1 years in other units left out.`,
      );
      // Per month: 2020's months are each in one unit, so the unit of the most readings (mg/L) keeps its own.
      await page.selectOption("#trend-period", "month");
      await textStarts(
        page,
        "#trend-note",
        `Mean of ${NAME}, the whole selection, per month: 5 months,`,
      );
      assert.equal(await page.getAttribute("#trend", "data-points"), "5");
      await traffic.settled();
      assert.deepEqual(traffic.refused, []);
      assert.equal(traffic.mostInFlight(), 1);
      assert.deepEqual(errors, []);
      await saveScreenshot(page, "explorer-two-units-desktop");
    } finally {
      await context.close();
    }
  });
});

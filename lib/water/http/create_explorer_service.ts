import { createRouter, type Route, type RunningService } from "../../http/mod.ts";
import { contentSecurityPolicy, pageLoader, pageRoutes, type WebPage } from "../../web/mod.ts";
import type { WaterConfig } from "../settings.ts";
import { REGION_IDS, type RegionId } from "../vocabulary.ts";

/** Options of {@linkcode createExplorerService}. */
export interface ExplorerServiceOptions {
  /**
   * Path of the water-data API the page asks.
   * @default {"/v1/odata/v4"}
   */
  apiBase?: string;
  /**
   * Reads the page (its HTML template, CSS, modules and map data); called once, as the service is made.
   * @default the page in `lib/water/explorer/`, its modules built by `npm run build` (in a checkout, compiled once per process)
   */
  load?: () => Promise<WebPage>;
}

/**
 * Where the page's files are served (and the page again): `/explorer/explorer.css`,
 * its modules `/explorer/explorer.js` (the page's), `query.js`, `map.js`,
 * `drawing.js`, `plot.js`, `table.js`, `summary.js` and the shared `api_client.js`, and
 * `/explorer/basemap.json`.
 */
const PAGE_PATH = "/explorer";

/**
 * The map's land, lakes, rivers and borders: Natural Earth (public domain),
 * simplified by scripts/basemap.ts.
 */
const BASEMAP = { name: "basemap.json", contentType: "application/json" } as const;

/** The names the explorer gives the region ids of the API (DataStream's hubs, Canada, its provinces and territories). */
const REGION_NAMES: Readonly<Record<RegionId, string>> = {
  "hub.atlantic": "Atlantic DataStream",
  "hub.greatlakes": "Great Lakes DataStream",
  "hub.lakewinnipeg": "Lake Winnipeg DataStream",
  "hub.mackenzie": "Mackenzie DataStream",
  "hub.pacific": "Pacific DataStream",
  "admin.2.ca": "Canada",
  "admin.4.ca.ab": "Alberta",
  "admin.4.ca.bc": "British Columbia",
  "admin.4.ca.mb": "Manitoba",
  "admin.4.ca.nb": "New Brunswick",
  "admin.4.ca.nl": "Newfoundland and Labrador",
  "admin.4.ca.ns": "Nova Scotia",
  "admin.4.ca.nt": "Northwest Territories",
  "admin.4.ca.nu": "Nunavut",
  "admin.4.ca.on": "Ontario",
  "admin.4.ca.pe": "Prince Edward Island",
  "admin.4.ca.qc": "Quebec",
  "admin.4.ca.sk": "Saskatchewan",
  "admin.4.ca.yt": "Yukon",
};

/**
 * The water-data explorer, a page at `GET /` (plain HTML, CSS and ES modules
 * compiled from TypeScript, under a strict Content-Security-Policy) that asks
 * the water-data API with the user's key: datasets, regions,
 * characteristics and dates to pick; the locations on a map drawn in SVG
 * over land, lakes, rivers and borders of Natural Earth (`/explorer/basemap.json`,
 * drawn offline; a tile server's tiles over them when one is configured), coloured by
 * each location's mean of the chosen characteristic; a time series; yearly
 * trends; a paged table; a summary per dataset and location with its CSV (the
 * summaries from the API's `$apply`); the API URLs and curl commands; a CSV download; citations and
 * licences. The tile server's origin (`MAP_TILE_URL`) joins the policy's
 * `img-src` and `connect-src`. Any other path under `/` that no other
 * service serves answers 404.
 * @param config the tile server and its credit (`MAP_TILE_URL`, `MAP_TILE_ATTRIBUTION`)
 * @param options the API's path and how to load the page
 * @returns the service, to mount at `/`
 * @example
 * ```ts
 * const explorer = createExplorerService(readSettings(WATER_SETTINGS, process.env));
 * ```
 */
export function createExplorerService(
  config: Pick<WaterConfig, "mapTiles" | "mapTileAttribution">,
  options: ExplorerServiceOptions = {},
): RunningService {
  const apiBase = options.apiBase ?? "/v1/odata/v4";
  const tiles = config.mapTiles;
  const policy = contentSecurityPolicy({
    dataImages: true,
    ...(tiles === undefined ? {} : { imgSrc: [tiles.origin], connectSrc: [tiles.origin] }),
  });
  const load = options.load ??
    pageLoader(new URL("../explorer/", import.meta.url), "explorer", { files: [BASEMAP] });
  const routes = pageRoutes(PAGE_PATH, async () => {
    const page = await load();
    return {
      ...page,
      html: fillTemplate(page.html, {
        apiBase: escapeHtml(apiBase),
        tileUrl: escapeHtml(tiles?.template ?? ""),
        tileAttribution: escapeHtml(config.mapTileAttribution),
        regionOptions: REGION_IDS.map((id) =>
          `<option value="${escapeHtml(id)}">${escapeHtml(`${REGION_NAMES[id]} (${id})`)}</option>`
        ).join(""),
      }),
    };
  }, {
    contentSecurityPolicy: policy,
    doc: {
      id: "explorer",
      summary: "The water-data explorer (also at /)",
      exampleAsset: "explorer.css",
    },
  });
  const page = routes.find((route) => route.path === PAGE_PATH);
  if (page?.doc === undefined) {
    throw new TypeError("Cannot serve the explorer: the page's routes have no route for the page");
  }
  const root: Route = {
    method: "GET",
    path: "/",
    handler: page.handler,
    doc: {
      ...page.doc,
      operationId: "explorer",
      summary: "The water-data explorer: a page that asks this API with the user's key",
    },
  };
  const router = createRouter([root, ...routes]);
  return {
    name: "explorer",
    prefixes: ["/"],
    handler: router,
    describe: (origin) => ({
      endpoints: [{ label: "Water-data explorer", url: `${origin}/` }],
      credentials: [],
      notes: [],
    }),
    drain: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
}

/**
 * The page's HTML with its `{{name}}` placeholders filled (`{{page}}` is left
 * for the page's routes); a placeholder the explorer does not know is a
 * mistake in the template.
 */
function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => {
    if (name === "page") return whole;
    const value = values[name];
    if (value === undefined) {
      throw new Error(
        `Cannot fill the explorer's page: it names an unknown placeholder {{${name}}}`,
      );
    }
    return value;
  });
}

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char);
}

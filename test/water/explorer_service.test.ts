import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createExplorerService } from "../../lib/water/http/create_explorer_service.ts";
import { parseTileUrl } from "../../lib/water/parse_tile_url.ts";
import { REGION_IDS } from "../../lib/water/vocabulary.ts";
import type { WebPage } from "../../lib/web/mod.ts";
import { bodyText, callHandler, makeRequest } from "../_helpers/http.ts";
import { parseCsp } from "../_helpers/browser.ts";

const NO_TILES = { mapTiles: undefined, mapTileAttribution: "" } as const;

describe("parseTileUrl()", () => {
  const good = [
    {
      name: "reads an XYZ template on https",
      input: "https://tile.openstreetmap.org/{z}/{x}/{y}.png",
      origin: "https://tile.openstreetmap.org",
    },
    {
      name: "keeps a port and takes the placeholders in the query",
      input: " http://127.0.0.1:8080/tiles?z={z}&x={x}&y={y} ",
      origin: "http://127.0.0.1:8080",
    },
  ] as const;
  for (const c of good) {
    it(
      c.name,
      () => assert.deepEqual(parseTileUrl(c.input), { template: c.input.trim(), origin: c.origin }),
    );
  }
  const bad = [
    { name: "refuses a template without {y}", input: "https://tiles.example.org/{z}/{x}.png" },
    {
      name: "refuses a {s} subdomain list (each host another origin)",
      input: "https://{s}.tile.example.org/{z}/{x}/{y}.png",
    },
    {
      name: "refuses a scheme other than https and http",
      input: "ftp://tiles.example.org/{z}/{x}/{y}.png",
    },
    {
      name: "refuses credentials in the URL",
      input: "https://user:secret@tiles.example.org/{z}/{x}/{y}.png",
    },
    { name: "refuses what is not a URL", input: "/tiles/{z}/{x}/{y}.png" },
  ] as const;
  for (const c of bad) it(c.name, () => assert.throws(() => parseTileUrl(c.input), RangeError));
});

/** A page like the explorer's own, from a template given here (no compiling). */
function fixedPage(html: string): () => Promise<WebPage> {
  return () =>
    Promise.resolve({
      html,
      assets: [
        { name: "explorer.css", contentType: "text/css; charset=utf-8", body: "body{}" },
        { name: "explorer.js", contentType: "text/javascript; charset=utf-8", body: "export {};" },
      ],
    });
}

describe("createExplorerService()", () => {
  it("serves the page at / with the API's path and every region filled in, and its modules and style under /explorer", async () => {
    // The real page: in a checkout its modules are compiled from the TypeScript as the service is made.
    const service = createExplorerService(NO_TILES);
    const page = await callHandler(service.handler, makeRequest({ path: "/" }));
    assert.equal(page.status, 200);
    assert.equal(page.headers?.["content-type"], "text/html; charset=utf-8");
    const html = await bodyText(page);
    assert.match(html, /<meta name="explorer:api" content="\/v1\/odata\/v4">/);
    assert.doesNotMatch(html, /\{\{/);
    for (const id of REGION_IDS) {
      assert.match(
        html,
        new RegExp(
          `<option value="${id.replaceAll(".", "\\.")}">[^<]+ \\(${
            id.replaceAll(".", "\\.")
          }\\)</option>`,
        ),
        id,
      );
    }
    const files = [
      ["explorer.css", "text/css"],
      ...["explorer", "query", "map", "drawing", "plot", "table", "summary", "api_client"].map((
        module,
      ) => [`${module}.js`, "text/javascript"]),
    ] as const;
    for (const [file, type] of files) {
      const asset = await callHandler(service.handler, makeRequest({ path: `/explorer/${file}` }));
      assert.equal(asset.status, 200, file);
      assert.ok(asset.headers?.["content-type"]?.startsWith(type), file);
      // A module compiled (without its comments), not an empty file: drawing.js, the smallest, is some 700 bytes.
      assert.ok((await bodyText(asset)).length > 500, file);
    }
    assert.match(
      await bodyText(
        await callHandler(service.handler, makeRequest({ path: "/explorer/query.js" })),
      ),
      /^export function buildFilter\(/m,
    );
    assert.match(
      await bodyText(
        await callHandler(service.handler, makeRequest({ path: "/explorer/summary.js" })),
      ),
      /^export function summaryApply\(/m,
    );
    assert.match(
      await bodyText(
        await callHandler(service.handler, makeRequest({ path: "/explorer/explorer.js" })),
      ),
      /^import \{ .+ \} from "\.\/query\.js";$/m,
    );
  });

  it("serves the map's basemap as JSON beside the page, and names it in the page", async () => {
    const service = createExplorerService(NO_TILES);
    assert.match(
      await bodyText(await callHandler(service.handler, makeRequest({ path: "/" }))),
      /<meta name="explorer:basemap" content="\/explorer\/basemap\.json">/,
    );
    const basemap = await callHandler(
      service.handler,
      makeRequest({ path: "/explorer/basemap.json" }),
    );
    assert.equal(basemap.status, 200);
    assert.equal(basemap.headers?.["content-type"], "application/json");
    const file = JSON.parse(await bodyText(basemap)) as {
      source: string;
      layers: { name: string }[];
    };
    assert.match(file.source, /^Natural Earth 4\.1\.0 \(public domain\)/);
    assert.deepEqual(file.layers.map((layer) => layer.name), [
      "land",
      "lakes",
      "rivers",
      "provinces",
      "countries",
    ]);
  });

  it("allows nothing but its own origin and data: images without a tile server", async () => {
    const service = createExplorerService(NO_TILES, { load: fixedPage("<p>{{apiBase}}</p>") });
    const page = await callHandler(service.handler, makeRequest({ path: "/" }));
    const csp = parseCsp(page.headers?.["content-security-policy"] ?? "");
    assert.deepEqual(csp.get("default-src"), ["'none'"]);
    assert.deepEqual(csp.get("script-src"), ["'self'"]);
    assert.deepEqual(csp.get("style-src"), ["'self'"]);
    assert.deepEqual(csp.get("img-src"), ["'self'", "data:"]);
    assert.deepEqual(csp.get("connect-src"), ["'self'"]);
  });

  it("adds the tile server's origin, and only it, to img-src and connect-src, and gives the page the template and credit", async () => {
    const tiles = parseTileUrl("https://tiles.example.org/osm/{z}/{x}/{y}.png");
    const service = createExplorerService(
      { mapTiles: tiles, mapTileAttribution: "© OpenStreetMap <contributors>" },
      { load: fixedPage('<meta name="t" content="{{tileUrl}}"><p>{{tileAttribution}}</p>') },
    );
    const page = await callHandler(service.handler, makeRequest({ path: "/" }));
    const csp = parseCsp(page.headers?.["content-security-policy"] ?? "");
    assert.deepEqual(csp.get("img-src"), ["'self'", "data:", "https://tiles.example.org"]);
    assert.deepEqual(csp.get("connect-src"), ["'self'", "https://tiles.example.org"]);
    assert.deepEqual(csp.get("script-src"), ["'self'"]);
    assert.equal(
      await bodyText(page),
      '<meta name="t" content="https://tiles.example.org/osm/{z}/{x}/{y}.png"><p>© OpenStreetMap &lt;contributors&gt;</p>',
    );
  });

  it("answers 404 for a path it does not serve", async () => {
    const service = createExplorerService(NO_TILES, { load: fixedPage("<p></p>") });
    for (const path of ["/nothing", "/explorer/other.js", "/explorer/a/b"]) {
      await assert.rejects(callHandler(service.handler, makeRequest({ path })), {
        code: "ERR_HTTP_NOT_FOUND",
      }, path);
    }
  });

  it("loads its page as it is made, not on a request", () => {
    let loads = 0;
    createExplorerService(NO_TILES, { load: () => (loads++, fixedPage("<p></p>")()) });
    assert.equal(loads, 1);
  });

  it("answers 503 for a template with a placeholder it does not know, and loads the page again on the next request", async () => {
    let loads = 0;
    const service = createExplorerService(NO_TILES, {
      load: () => fixedPage(++loads === 1 ? "<p>{{nonsense}}</p>" : "<p>{{apiBase}}</p>")(),
    });
    // The load as the service was made failed; the first request meets it.
    await assert.rejects(callHandler(service.handler, makeRequest({ path: "/" })), {
      code: "ERR_HTTP_UNAVAILABLE",
    });
    assert.equal(
      await bodyText(await callHandler(service.handler, makeRequest({ path: "/" }))),
      "<p>/v1/odata/v4</p>",
    );
    assert.equal(loads, 2);
  });

  it("is mounted at / and describes itself as the explorer", () => {
    const service = createExplorerService(NO_TILES, { apiBase: "/water", load: fixedPage("") });
    assert.deepEqual(service.prefixes, ["/"]);
    assert.deepEqual(service.describe("http://127.0.0.1:8000").endpoints, [{
      label: "Water-data explorer",
      url: "http://127.0.0.1:8000/",
    }]);
    assert.deepEqual(service.handler.routes.map((route) => route.path), [
      "/",
      "/explorer",
      "/explorer/:asset",
    ]);
  });
});

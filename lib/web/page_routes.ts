import { sha256Hex } from "../crypto/mod.ts";
import { errorResponses, ifNoneMatch } from "../http/_internal.ts";
import {
  HttpError,
  type HttpRequest,
  type HttpResponse,
  type ResponseDoc,
  type Route,
  type RouteDoc,
} from "../http/mod.ts";
import { contentSecurityPolicy } from "./content_security_policy.ts";

/** A file a page loads: its stylesheet or its script. */
export interface WebAsset {
  /** The file name under the page's path, e.g. `portal.js`. */
  readonly name: string;
  /** e.g. `text/javascript; charset=utf-8`. */
  readonly contentType: string;
  readonly body: string;
}

/** A page: its HTML and the files it loads. */
export interface WebPage {
  /**
   * The HTML. `{{page}}` stands for the path the page is served at, so that
   * it names its assets absolutely (`{{page}}/portal.js`) wherever it is mounted.
   */
  readonly html: string;
  readonly assets: readonly WebAsset[];
}

/** Options of {@linkcode pageRoutes}. */
export interface PageRoutesOptions {
  /**
   * The Content-Security-Policy header of the page and its files.
   * @default contentSecurityPolicy()
   */
  readonly contentSecurityPolicy?: string;
  /**
   * How the OpenAPI document lists the page: its routes' operation ids are
   * `<id>Page` and `<id>Asset`, the asset's example is one of its files.
   * @default no doc
   */
  readonly doc?: PageDoc;
}

/** How the OpenAPI document lists a page (see {@linkcode PageRoutesOptions.doc}). */
export interface PageDoc {
  /** e.g. `portal`. */
  readonly id: string;
  /** One line, e.g. `The relay portal`. */
  readonly summary: string;
  /** A file of the page, e.g. `portal.css`. */
  readonly exampleAsset: string;
}

/** What a loaded page answers with: bodies and tags made once. */
interface Served {
  readonly html: Representation;
  readonly assets: ReadonlyMap<string, Representation>;
}

interface Representation {
  readonly contentType: string;
  readonly body: string;
  readonly etag: string;
}

const HTML_TYPE = "text/html; charset=utf-8";
const SAFE_PATH = /^(?:\/[A-Za-z0-9._~-]+)+$/;
const SAFE_NAME = /^[A-Za-z0-9._~-]+$/;

/**
 * The routes of a page: `GET <path>` answers its HTML and `GET <path>/<name>`
 * each of its assets, all with a strict Content-Security-Policy,
 * `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`, an
 * entity tag (304 to a matching `If-None-Match`) and `Cache-Control:
 * no-cache`, so a browser checks its copy again on every load. The page is
 * loaded at once, when the routes are made (as the service that serves it
 * starts: in a checkout, that is when the pages' scripts are compiled, once
 * per process), and kept: its build is under way before any request (one
 * that comes before it is done waits for it), never set off by one; a load
 * that fails answers 503 and is tried again on the next request.
 * @param path where the page is served, e.g. `/webhook/portal`
 * @param load reads the page
 * @param options the policy
 * @returns the routes, for the service's router
 * @throws {TypeError} when `path` or an asset's name is not a plain path
 * @example
 * ```ts
 * const routes = pageRoutes("/webhook/portal", pageLoader(new URL("./portal/", import.meta.url), "portal"));
 * ```
 */
export function pageRoutes(
  path: string,
  load: () => Promise<WebPage>,
  options: PageRoutesOptions = {},
): Route[] {
  if (!SAFE_PATH.test(path)) {
    throw new TypeError(
      `Cannot serve a page at "${path}": give a path of plain segments such as /webhook/portal`,
    );
  }
  const policy = options.contentSecurityPolicy ?? contentSecurityPolicy();
  let served: Promise<Served> | undefined;

  function page(): Promise<Served> {
    served ??= load().then((loaded) => prepare(path, loaded)).catch((error: unknown) => {
      served = undefined;
      throw new HttpError(
        "ERR_HTTP_UNAVAILABLE",
        `Cannot serve the page ${path}: ${(error as Error).message}`,
        {
          headers: { "retry-after": "5" },
          cause: error,
        },
      );
    });
    return served;
  }
  // Loaded now, not on the first request; a failure is answered (503) to the requests that meet it.
  page().catch(() => undefined);

  function answer(request: HttpRequest, representation: Representation): HttpResponse {
    const headers = {
      "content-security-policy": policy,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cross-origin-opener-policy": "same-origin",
      "cache-control": "no-cache",
      etag: representation.etag,
    };
    if (ifNoneMatch(request, representation.etag)) return { status: 304, headers };
    return {
      status: 200,
      headers: { ...headers, "content-type": representation.contentType },
      body: representation.body,
    };
  }

  const docs = options.doc === undefined ? undefined : pageDocs(options.doc);
  return [
    {
      method: "GET",
      path,
      handler: async (request) => answer(request, (await page()).html),
      ...(docs === undefined ? {} : { doc: docs.page }),
    },
    {
      method: "GET",
      path: `${path}/:asset`,
      handler: async (request, params) => {
        const asset = (await page()).assets.get(params["asset"]!);
        if (asset === undefined) {
          throw new HttpError(
            "ERR_HTTP_NOT_FOUND",
            `Cannot find ${request.path}: the page has no such file`,
          );
        }
        return answer(request, asset);
      },
      ...(docs === undefined ? {} : { doc: docs.asset }),
    },
  ];
}

const PAGE_HEADERS = {
  "Content-Security-Policy": {
    description: "The page's policy: its own origin only, no inline script or style",
    schema: { type: "string" },
    required: true,
  },
  ETag: {
    description: "Its version, for `If-None-Match`",
    schema: { type: "string" },
    required: true,
  },
} as const;

const NOT_MODIFIED: ResponseDoc = {
  description: "Not modified: `If-None-Match` named its current version",
  headers: PAGE_HEADERS,
};

/** The docs of a page's two routes: the page, and its files. */
function pageDocs(doc: PageDoc): { readonly page: RouteDoc; readonly asset: RouteDoc } {
  return {
    page: {
      operationId: `${doc.id}Page`,
      summary: doc.summary,
      responses: {
        "200": {
          description: "The page",
          headers: PAGE_HEADERS,
          content: { "text/html": { schema: { type: "string" } } },
        },
        "304": NOT_MODIFIED,
        ...errorResponses(["ERR_HTTP_UNAVAILABLE"]),
      },
      security: [],
    },
    asset: {
      operationId: `${doc.id}Asset`,
      summary: `A file of the page: ${doc.summary.replace(/^The /, "the ")}`,
      parameters: [{
        name: "asset",
        in: "path",
        description: "The file's name",
        schema: { type: "string", pattern: SAFE_NAME.source },
        example: doc.exampleAsset,
      }],
      responses: {
        "200": {
          description: "The file",
          headers: PAGE_HEADERS,
          content: {
            "text/css": { schema: { type: "string" } },
            "text/javascript": { schema: { type: "string" } },
          },
        },
        "304": NOT_MODIFIED,
        ...errorResponses(["ERR_HTTP_NOT_FOUND", "ERR_HTTP_UNAVAILABLE"]),
      },
      security: [],
    },
  };
}

function prepare(path: string, page: WebPage): Served {
  const assets = new Map<string, Representation>();
  for (const asset of page.assets) {
    if (!SAFE_NAME.test(asset.name)) {
      throw new TypeError(`Cannot serve the asset "${asset.name}": give a plain file name`);
    }
    assets.set(asset.name, represent(asset.contentType, asset.body));
  }
  return { html: represent(HTML_TYPE, page.html.replaceAll("{{page}}", path)), assets };
}

function represent(contentType: string, body: string): Representation {
  return { contentType, body, etag: `"${sha256Hex(body).slice(0, 32)}"` };
}

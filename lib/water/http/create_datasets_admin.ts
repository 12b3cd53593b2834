import { sha256Hex } from "../../crypto/mod.ts";
import {
  type ApiKey,
  createRouter,
  HttpError,
  type HttpRequest,
  type Router,
} from "../../http/mod.ts";
import { jsonResponse } from "../../http/_internal.ts";
import { ADMIN_DOCS } from "./api_docs.ts";
import type { ReloadReport } from "../load/load_datasets.ts";

/** What the admin routes drive: a reload, and what serves now (e.g. `LiveDatasets`). */
export interface ReloadableDatasets {
  reload(): Promise<ReloadReport>;
  readonly loaded: { readonly report: ReloadReport };
  readonly reloading: boolean;
}

/** Options of {@linkcode createDatasetsAdmin}. */
export interface DatasetsAdminOptions {
  /** Admin keys, by hash (see `indexApiKeys`); none refuses every request. */
  readonly keys: ReadonlyMap<string, ApiKey>;
  /**
   * Path of the admin routes.
   * @default {"/admin/datasets"}
   */
  readonly basePath?: string;
  /** Hears each reload a request made, with its report or its error, e.g. to log it. */
  readonly onReload?: (
    outcome: { readonly report: ReloadReport } | { readonly error: unknown },
  ) => void;
}

/** The JSON of a reload report: each dataset served and how it came to, those removed, those that failed. */
export interface ReloadReportBody {
  readonly datasets: readonly {
    readonly folder: string;
    readonly doi: string;
    readonly change: string;
    readonly locations: number;
    readonly observations: number;
    readonly skippedRows: number;
  }[];
  readonly removed: ReloadReport["removed"];
  readonly failures: readonly {
    readonly folder: string;
    readonly file: string;
    readonly line: number;
    readonly column: number;
    readonly message: string;
    readonly kept: boolean;
  }[];
  readonly locations: number;
  readonly observations: number;
}

/**
 * Creates the datasets' admin routes, for an operator holding an admin key
 * (`Authorization: Bearer <key>` or `x-api-key`): `POST <base>/reload`
 * loads the datasets folder again and answers the reload's report once the
 * new store serves (reloads asked for together share one; see
 * `LiveDatasets`), and `GET <base>` answers the report of the last load.
 * @param datasets what to reload
 * @param options admin keys, base path, and who hears of reloads
 * @returns the routes
 * @example
 * ```ts
 * const admin = createDatasetsAdmin(live, { keys: indexApiKeys([parseApiKey("admin", "s3cret")]) });
 * ```
 */
export function createDatasetsAdmin(
  datasets: ReloadableDatasets,
  options: DatasetsAdminOptions,
): Router {
  const base = options.basePath ?? "/admin/datasets";
  const guard = (request: HttpRequest): void => authenticateAdmin(request, options.keys);
  return createRouter([
    {
      method: "GET",
      path: base,
      handler: (request) => {
        guard(request);
        return jsonResponse(200, {
          reloading: datasets.reloading,
          ...reloadReportBody(datasets.loaded.report),
        }, NO_STORE);
      },
      doc: ADMIN_DOCS.report,
    },
    {
      method: "POST",
      path: `${base}/reload`,
      handler: async (request) => {
        guard(request);
        let report: ReloadReport;
        try {
          report = await datasets.reload();
        } catch (error) {
          options.onReload?.({ error });
          throw error;
        }
        options.onReload?.({ report });
        return jsonResponse(200, reloadReportBody(report), NO_STORE);
      },
      doc: ADMIN_DOCS.reload,
    },
  ]);
}

const NO_STORE = { "cache-control": "no-store" } as const;

/**
 * The JSON of a reload report.
 * @param report the report
 * @returns its body
 */
export function reloadReportBody(report: ReloadReport): ReloadReportBody {
  let locations = 0;
  let observations = 0;
  for (const dataset of report.datasets) {
    locations += dataset.locations;
    observations += dataset.rows;
  }
  return {
    datasets: report.datasets.map((dataset) => ({
      folder: dataset.folder,
      doi: dataset.doi,
      change: dataset.change,
      locations: dataset.locations,
      observations: dataset.rows,
      skippedRows: dataset.skippedRows,
    })),
    removed: report.removed,
    failures: report.failures.map(({ folder, file, line, column, message, kept }) => ({
      folder,
      file,
      line,
      column,
      message,
      kept,
    })),
    locations,
    observations,
  };
}

/** Refuses a request without an admin key (401, with a Bearer challenge) or with another key (403). */
function authenticateAdmin(request: HttpRequest, keys: ReadonlyMap<string, ApiKey>): void {
  const authorization = request.headers["authorization"];
  let presented = request.headers["x-api-key"]?.trim();
  if (authorization !== undefined) {
    const match = /^Bearer +(\S+) *$/i.exec(authorization);
    if (match === null) throw unauthorized('the Authorization header must be "Bearer <admin key>"');
    presented = match[1];
  }
  if (presented === undefined || presented === "") {
    throw unauthorized('send an admin key as "Authorization: Bearer <key>" or in x-api-key');
  }
  if (!keys.has(sha256Hex(presented))) {
    const why = keys.size === 0
      ? "no admin keys are configured (ADMIN_API_KEYS)"
      : "the key is not an admin key";
    throw new HttpError("ERR_HTTP_FORBIDDEN", `Cannot authenticate the request: ${why}`);
  }
}

function unauthorized(why: string): HttpError {
  return new HttpError("ERR_HTTP_UNAUTHORIZED", `Cannot authenticate the request: ${why}`, {
    headers: { "www-authenticate": 'Bearer realm="datasets admin"' },
  });
}

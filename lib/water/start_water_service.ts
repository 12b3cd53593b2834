import { randomUUID } from "node:crypto";
import { readdir } from "node:fs/promises";
import { ConfigError, type ConfigPath, readConfigPath, redactUrl } from "../config/mod.ts";
import {
  type ApiKey,
  indexApiKeys,
  keepRoutes,
  mountHandlers,
  readApiKeysFile,
  type ReadinessProbe,
  RedisRateLimiter,
  type RunningService,
  type ServiceCredential,
  type ServiceLog,
} from "../http/mod.ts";
import { count, OutageLog } from "../log/mod.ts";
import { connectRedis, type RedisScripts, STORAGE_SETTINGS } from "../storage/mod.ts";
import { createDatasetsAdmin } from "./http/create_datasets_admin.ts";
import { createWaterService } from "./http/create_water_service.ts";
import { LiveDatasets } from "./load/live_datasets.ts";
import type { LoadProgress, ReloadReport } from "./load/load_datasets.ts";
import { resolveDatasetCacheDir, type WaterConfig } from "./settings.ts";
import { WATER_ERROR_STATUS } from "./error_status.ts";

/** Options of {@linkcode startWaterService}. */
export interface StartWaterServiceOptions {
  /** Monotonic clock in milliseconds, for rate limits and deadlines, e.g. `() => performance.now()`. */
  now: () => number;
  /**
   * Path of the service root.
   * @default {"/v1/odata/v4"}
   */
  basePath?: string;
  /**
   * Path of the datasets' admin routes.
   * @default {"/admin/datasets"}
   */
  adminPath?: string;
  /**
   * Where reloads, and the outages of the rate limits' Redis, are reported.
   * @default nowhere
   */
  log?: ServiceLog;
  /**
   * The size from which the app compresses answers (`COMPRESS_ABOVE_BYTES`):
   * big pages the service compresses itself (as they render, or kept) follow it.
   * @default {1024}
   */
  compressAboveBytes?: number;
  /** Told how far loading the datasets has come, after each chunk read (at start and at each reload). */
  onLoadProgress?: (state: LoadProgress) => void;
  /**
   * Wall clock, milliseconds since the epoch (how long an outage of the rate limits' Redis lasted).
   * @default {Date.now}
   */
  wallClock?: () => number;
  /**
   * The state folder (`STATE_DIR`, as the storage settings read it): with
   * `DATASET_CACHE_DIR` unset, the datasets' snapshots are kept in its
   * `dataset-cache` folder; empty for none. The app gives its own.
   * @default STATE_DIR's default, `var`
   */
  stateDir?: string;
  /**
   * Connects to the rate limits' Redis (`RATE_LIMIT_REDIS_URL`): an app
   * gives its backends' connections (`Backends.redis`), shared with every
   * module on the same server.
   * @default {connectRedis}: a connection of the service's own, closed with it
   */
  redis?: typeof connectRedis;
}

/**
 * Starts the water-data API as an app runs it: reads the API keys
 * (`API_KEYS_FILE` and `API_KEYS`), loads the datasets of `DATA_DIR`, and
 * describes what it serves (the keys given in plain text, what was loaded
 * and what was not). The datasets are live: the service's `reload` (an app
 * calls it on `SIGHUP`) and `POST /admin/datasets/reload` (with a key of
 * `ADMIN_API_KEYS`) load the folder again and swap the store in. In a new
 * project, where the default `API_KEYS_FILE` and `DATA_DIR` do not exist, it
 * starts with no keys (but `API_KEYS`) and no datasets, each said in one
 * line of the log.
 * @param config the water settings
 * @param options the clock and base path
 * @returns the running service
 * @throws {ConfigError} naming the variable when keys are configured to be none, or a file or folder it names cannot be read
 * @example
 * ```ts
 * const water = await startWaterService(readSettings(WATER_SETTINGS, process.env), { now: () => performance.now() });
 * createServer(createNodeListener(water.handler)).listen(8000);
 * ```
 */
export async function startWaterService(
  config: WaterConfig,
  options: StartWaterServiceOptions,
): Promise<RunningService> {
  const base = options.basePath ?? "/v1/odata/v4";
  const log = options.log;
  const keys: ApiKey[] = [...config.apiKeys];
  const credentials: ServiceCredential[] = [];
  const keysText = await readConfigPath(config.apiKeysFile, "API_KEYS_FILE");
  if (keysText !== undefined) {
    const file = readApiKeysFile(keysText, config.apiKeysFile.path);
    keys.push(...file.keys);
    for (const [name, key] of file.plain) {
      credentials.push({
        label: `API key "${name}"`,
        value: key,
        setting: "API_KEYS_FILE",
        file: config.apiKeysFile.path,
      });
    }
  }
  if (keys.length === 0) {
    // Keys configured to be none (API_KEYS_FILE set empty, or a file without keys) would serve nobody: a mistake.
    if (keysText !== undefined || config.apiKeysFile.given) {
      throw new ConfigError(
        "API_KEYS",
        "Cannot start: no API keys are configured; set API_KEYS or API_KEYS_FILE",
      );
    }
    log?.info(
      `Water data: no API keys: API_KEYS_FILE ${config.apiKeysFile.path} does not exist and API_KEYS is empty: every request that needs a key is refused (401) until one is set`,
    );
  }
  const dataDir = config.dataDir.path;
  const folderMissing = await datasetsFolderMissing(config.dataDir);
  if (folderMissing) {
    log?.info(
      `Water data: no datasets: DATA_DIR ${dataDir} does not exist; put datasets there and reload (SIGHUP)`,
    );
  }
  const live = await LiveDatasets.open(dataDir, {
    snapshotDir: resolveDatasetCacheDir(
      config.datasetCacheDir,
      options.stateDir ?? STORAGE_SETTINGS.stateDir.read(undefined, "STATE_DIR", {}),
    ),
    // The default folder may come later: a reload then loads it.
    optionalFolder: !config.dataDir.given,
    ...(options.onLoadProgress === undefined ? {} : { onProgress: options.onLoadProgress }),
  });
  const logReload = (report: ReloadReport): void => {
    for (const line of reloadLines(report, dataDir)) log?.info(line);
  };
  let redis: RedisScripts | undefined;
  const readiness: ReadinessProbe[] = [];
  if (config.rateLimitRedisUrl !== "") {
    const where = redactUrl(config.rateLimitRedisUrl);
    // While it is away, keyed requests answer 503; the log has a line when it goes and one when it is back.
    const outage = new OutageLog(
      log ?? { info: () => {}, error: () => {} },
      `Rate limits: Redis at ${where}`,
      options.wallClock ?? Date.now,
    );
    try {
      redis = await (options.redis ?? connectRedis)(config.rateLimitRedisUrl, {
        onError: (error) => outage.failed(error),
        onReady: () => outage.recovered(),
      });
    } catch (error) {
      throw new ConfigError(
        "RATE_LIMIT_REDIS_URL",
        `Cannot start: cannot reach RATE_LIMIT_REDIS_URL ${where}: ${(error as Error).message}`,
      );
    }
    const connection = redis;
    readiness.push({
      part: `rate limits: Redis at ${where}`,
      check: async () => void (await outage.watch(connection.run("return 1", []))),
    });
  }
  let permits = 0;
  // Unique over replicas (two containers may both be pid 1).
  const permitPrefix = `${randomUUID()}:`;
  const water = createWaterService(live, {
    ...(redis === undefined ? {} : {
      limiter: new RedisRateLimiter(redis, {
        ratePerSecond: config.rateLimitPerSecond,
        burst: config.rateLimitBurst,
        maxConcurrent: config.rateLimitConcurrency,
        permitTtlMs: config.queryTimeoutMs + 30_000,
        permitId: () => `${permitPrefix}${++permits}`,
      }),
    }),
    keys: indexApiKeys(keys),
    now: options.now,
    basePath: base,
    corsOrigins: config.corsOrigins,
    ratePerSecond: config.rateLimitPerSecond,
    burst: config.rateLimitBurst,
    maxConcurrent: config.rateLimitConcurrency,
    queryTimeoutMs: config.queryTimeoutMs,
    maxResponseBytes: config.maxResponseBytes,
    renderCacheBytes: config.renderCacheBytes,
    maxGroups: config.maxGroups,
    ...(options.compressAboveBytes === undefined
      ? {}
      : { compressAboveBytes: options.compressAboveBytes }),
  });
  const adminPath = options.adminPath ?? "/admin/datasets";
  const admin = createDatasetsAdmin(live, {
    keys: indexApiKeys(config.adminApiKeys),
    basePath: adminPath,
    onReload: (outcome) => {
      if ("report" in outcome) logReload(outcome.report);
      else {log?.error(
          `Datasets not reloaded from ${dataDir}; those loaded before keep serving`,
          outcome.error,
        );}
    },
  });
  const handler = keepRoutes(
    mountHandlers([{ prefix: base, handler: water }, { prefix: adminPath, handler: admin }]),
    {
      routes: [...water.routes, ...admin.routes],
      routeOf: (request) => water.routeOf(request) ?? admin.routeOf(request),
    },
  );
  // A folder that was not there was said at start already.
  const loaded = folderMissing ? [] : reportLines(live.loaded.report, dataDir);
  const adminNote = config.adminApiKeys.length === 0
    ? `Datasets reload on SIGHUP (POST ${adminPath}/reload is refused: no ADMIN_API_KEYS)`
    : `Datasets reload on SIGHUP and POST ${adminPath}/reload (with an ADMIN_API_KEYS key)`;
  return {
    name: "water",
    errorStatus: WATER_ERROR_STATUS,
    prefixes: [base, adminPath],
    handler,
    readiness,
    describe: (origin) => {
      // A first request: with the first key the file holds in plain text (the host decides whether to show it), else with a placeholder.
      const tryIt = `curl -H 'x-api-key: {value}' '${origin}${base}/Locations?$top=2'`;
      const [first, ...others] = credentials;
      return {
        endpoints: [{ label: "Water data", url: `${origin}${base}` }],
        credentials: first === undefined ? [] : [{ ...first, example: tryIt }, ...others],
        notes: [
          ...loaded,
          adminNote,
          ...(redis === undefined
            ? []
            : ["Rate limits: counted in Redis (RATE_LIMIT_REDIS_URL), shared by every replica"]),
          ...(first === undefined ? [`Try: ${tryIt.replace("{value}", "<your key>")}`] : []),
        ],
      };
    },
    reload: async () => {
      logReload(await live.reload());
    },
    drain: () => Promise.resolve(),
    close: () => redis?.close() ?? Promise.resolve(),
  };
}

/**
 * Whether the datasets folder is a default one that does not exist (a new
 * project): none then. A folder that `DATA_DIR` names, or a default that is
 * there, must be readable.
 * @throws {ConfigError} naming DATA_DIR when it cannot be read
 */
async function datasetsFolderMissing(dir: ConfigPath): Promise<boolean> {
  try {
    await readdir(dir.path);
    return false;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!dir.given && (code === "ENOENT" || code === "ENOTDIR")) return true;
    throw new ConfigError(
      "DATA_DIR",
      `Cannot start: DATA_DIR names ${dir.path}, which cannot be read (${
        code ?? (error as Error).message
      })`,
    );
  }
}

/** What a reload changed, for the log: a line per dataset added, replaced, removed or not loaded, then one in all. */
function reloadLines(report: ReloadReport, dir: string): string[] {
  const counts = { added: 0, replaced: 0, unchanged: 0, kept: 0 };
  let rows = 0;
  const lines: string[] = [];
  for (const dataset of report.datasets) {
    counts[dataset.change]++;
    rows += dataset.rows;
    if (dataset.change === "added" || dataset.change === "replaced") {
      const skipped = dataset.skippedRows === 0
        ? ""
        : `, ${count(dataset.skippedRows, "row")} skipped`;
      lines.push(
        `  ${
          dataset.change === "added" ? "Added" : "Replaced"
        } ${dataset.folder} (${dataset.doi}): ${count(dataset.rows, "observation")}, ${
          count(dataset.locations, "location")
        }${skipped}`,
      );
    }
  }
  for (const dataset of report.removed) lines.push(`  Removed ${dataset.folder} (${dataset.doi})`);
  for (const note of report.snapshotNotes) lines.push(`  ${note}`);
  for (const failure of report.failures) {
    const where = failure.line === 0
      ? failure.file
      : `${failure.file}:${failure.line}:${failure.column}`;
    lines.push(
      `  Not loaded: ${where}: ${failure.message}${
        failure.kept ? " (the version loaded before keeps serving)" : ""
      }`,
    );
  }
  const summary =
    `Datasets reloaded from ${dir}: ${counts.added} added, ${counts.replaced} replaced, ${report.removed.length} removed, ` +
    `${counts.unchanged} unchanged, ${report.failures.length} not loaded (${counts.kept} kept as they were); ` +
    `${count(report.datasets.length, "dataset")}, ${count(rows, "observation")}`;
  return [...lines, summary];
}

function reportLines(report: ReloadReport, dir: string): string[] {
  const lines: string[] = [];
  let rows = 0;
  for (const dataset of report.datasets) {
    rows += dataset.rows;
    const skipped = dataset.skippedRows === 0
      ? ""
      : `, ${count(dataset.skippedRows, "row")} skipped`;
    lines.push(
      `Loaded ${dataset.folder} (${dataset.doi}): ${count(dataset.rows, "observation")}, ${
        count(dataset.locations, "location")
      }${skipped}`,
    );
    for (const issue of dataset.issues) {
      lines.push(
        `  ${issue.file}:${issue.line}:${issue.column}${
          issue.field === undefined ? "" : ` (${issue.field})`
        }: ${issue.message}`,
      );
    }
  }
  for (const failure of report.failures) {
    lines.push(`Not loaded: ${failure.file}: ${failure.message}`);
  }
  lines.push(...report.snapshotNotes);
  const snapshots = report.datasets.filter((dataset) => dataset.snapshot === "read").length;
  lines.push(
    `${count(report.datasets.length, "dataset")}, ${count(rows, "observation")} from ${dir}${
      snapshots === 0 ? "" : ` (${snapshots} from their snapshots)`
    }`,
  );
  return lines;
}

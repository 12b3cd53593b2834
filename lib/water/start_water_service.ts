import { randomUUID } from "node:crypto";
import { ConfigError, readConfigFile } from "../config/mod.ts";
import { type ApiKey, indexApiKeys, readApiKeysFile, RedisRateLimiter, type RunningService, type ServiceCredential } from "../http/mod.ts";
import { connectRedis, type RedisScripts } from "../storage/mod.ts";
import { createWaterService } from "./create_water_service.ts";
import { type LoadReport, loadDatasets } from "./load_datasets.ts";
import type { WaterConfig } from "./settings.ts";

/** Options of {@linkcode startWaterService}. */
export interface StartWaterServiceOptions {
  /** Monotonic clock in milliseconds, for rate limits and deadlines, e.g. `() => performance.now()`. */
  now: () => number;
  /**
   * Path of the service root.
   * @default {"/v1/odata/v4"}
   */
  basePath?: string;
}

/**
 * Starts the water-data API as an app runs it: reads the API keys
 * (`API_KEYS_FILE` and `API_KEYS`), loads the datasets of `DATA_DIR`, and
 * describes what it serves (the keys given in plain text, what was loaded
 * and what was not).
 * @param config the water settings
 * @param options the clock and base path
 * @returns the running service
 * @throws {ConfigError} when no key is configured or a file cannot be read
 * @example
 * ```ts
 * const water = await startWaterService(readSettings(WATER_SETTINGS, process.env), { now: () => performance.now() });
 * createServer(createNodeListener(water.handler)).listen(8000);
 * ```
 */
export async function startWaterService(config: WaterConfig, options: StartWaterServiceOptions): Promise<RunningService> {
  const base = options.basePath ?? "/v1/odata/v4";
  const keys: ApiKey[] = [...config.apiKeys];
  const credentials: ServiceCredential[] = [];
  if (config.apiKeysFile !== "") {
    const file = readApiKeysFile(await readConfigFile(config.apiKeysFile, "API_KEYS_FILE"), config.apiKeysFile);
    keys.push(...file.keys);
    for (const [name, key] of file.plain) credentials.push({ label: `API key "${name}"`, value: key });
  }
  if (keys.length === 0) {
    throw new ConfigError("API_KEYS", "Cannot start: no API keys are configured; set API_KEYS or API_KEYS_FILE");
  }
  const { store, report } = await loadDatasets(config.dataDir);
  let redis: RedisScripts | undefined;
  if (config.rateLimitRedisUrl !== "") {
    try {
      redis = await connectRedis(config.rateLimitRedisUrl);
    } catch (error) {
      const where = config.rateLimitRedisUrl.replace(/\/\/[^@/]*@/, "//***@");
      throw new ConfigError("RATE_LIMIT_REDIS_URL", `Cannot start: cannot reach RATE_LIMIT_REDIS_URL ${where}: ${(error as Error).message}`);
    }
  }
  let permits = 0;
  // Unique over replicas (two containers may both be pid 1).
  const permitPrefix = `${randomUUID()}:`;
  const handler = createWaterService(store, {
    ...(redis === undefined ? {} : {
      limiter: new RedisRateLimiter(redis, {
        ratePerSecond: config.rateLimitPerSecond,
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
    maxConcurrent: config.rateLimitConcurrency,
    queryTimeoutMs: config.queryTimeoutMs,
    maxResponseBytes: config.maxResponseBytes,
    renderCacheBytes: config.renderCacheBytes,
  });
  const example = credentials[0]?.value ?? "<your key>";
  const loaded = reportLines(report, config.dataDir);
  return {
    name: "water",
    prefixes: [base],
    handler,
    describe: (origin) => ({
      endpoints: [{ label: "Water data", url: `${origin}${base}` }],
      credentials,
      notes: [...loaded, ...(redis === undefined ? [] : ["Rate limits: counted in Redis (RATE_LIMIT_REDIS_URL), shared by every replica"]), `Try: curl -H 'x-api-key: ${example}' '${origin}${base}/Locations?$top=2'`],
    }),
    drain: () => Promise.resolve(),
    close: () => redis?.close() ?? Promise.resolve(),
  };
}

function reportLines(report: LoadReport, dir: string): string[] {
  const lines: string[] = [];
  let rows = 0;
  for (const dataset of report.datasets) {
    rows += dataset.rows;
    const skipped = dataset.skippedRows === 0 ? "" : `, ${dataset.skippedRows} rows skipped`;
    lines.push(`Loaded ${dataset.folder} (${dataset.doi}): ${dataset.rows} observations, ${dataset.locations} locations${skipped}`);
    for (const issue of dataset.issues) {
      lines.push(`  ${issue.file}:${issue.line}:${issue.column}${issue.field === undefined ? "" : ` (${issue.field})`}: ${issue.message}`);
    }
  }
  for (const failure of report.failures) lines.push(`Not loaded: ${failure.file}: ${failure.message}`);
  lines.push(`${report.datasets.length} datasets, ${rows} observations from ${dir}`);
  return lines;
}

import type { RunningService } from "../http/mod.ts";
import { type Logger, Progress } from "../log/mod.ts";
import type { connectRedis } from "../storage/mod.ts";
import { createExplorerService } from "./http/create_explorer_service.ts";
import type { LoadProgress } from "./load/load_datasets.ts";
import type { WaterConfig } from "./settings.ts";
import { startWaterService } from "./start_water_service.ts";

/** What the water module reads of an app's configuration. */
export interface WaterModuleConfig {
  readonly water: WaterConfig;
  /** JSON and CSV bodies from this size on are compressed (`COMPRESS_ABOVE_BYTES`). */
  readonly server: { readonly compressAboveBytes: number };
}

/** What the water module needs of the app it runs in. */
export interface WaterContext {
  /** Wall clock, milliseconds since the epoch. */
  readonly now: () => number;
  /** Monotonic clock, milliseconds (deadlines, rate limits, progress). */
  readonly monotonic: () => number;
  readonly log: Logger;
  /**
   * The app's backends: the state folder's path (`STATE_DIR`), where the
   * datasets' snapshots go when `DATASET_CACHE_DIR` is unset, and the
   * connections to Redis the rate limits count in (`RATE_LIMIT_REDIS_URL`).
   */
  readonly backends: { readonly stateDirPath: string; readonly redis: typeof connectRedis };
}

/**
 * The water-data API and its explorer as one module of an app: the
 * datasets loaded (a progress line at most a second while a large set
 * loads), the OData API, its admin routes, and the explorer page at `/`.
 * Its `SERVICES` name is `water`.
 * @example
 * ```ts
 * const app = createApp(readConfig(process.env), { modules: [WATER_MODULE] });
 * ```
 */
export const WATER_MODULE = {
  name: "water",
  /**
   * Loads the datasets and starts the API and the explorer.
   * @param config the water settings and the compression threshold
   * @param context the app's clocks, log and backends
   * @returns the API, then the explorer
   */
  async start(
    config: WaterModuleConfig,
    context: WaterContext,
  ): Promise<readonly RunningService[]> {
    const { log, monotonic } = context;
    let loading: Progress | undefined;
    let read = 0;
    let rows = 0;
    const onLoadProgress = (progress: LoadProgress): void => {
      if (loading === undefined || progress.bytes < read) {
        loading = new Progress({ label: "Loading datasets", now: monotonic, log, unit: "rows" });
      }
      read = progress.bytes;
      rows = progress.rows;
      loading.update({
        done: progress.rows,
        bytes: progress.bytes,
        totalBytes: progress.totalBytes,
      });
    };
    const water = await startWaterService(config.water, {
      now: monotonic,
      wallClock: context.now,
      log,
      onLoadProgress,
      compressAboveBytes: config.server.compressAboveBytes,
      stateDir: context.backends.stateDirPath,
      redis: context.backends.redis,
    });
    loading?.finish({ done: rows });
    // The water-data explorer, a page at `/` that asks the water API with the user's key.
    return [water, createExplorerService(config.water)];
  },
} as const;

import { join } from "node:path";
import {
  type ConfigOf,
  customSetting,
  integerSetting,
  listSetting,
  numberSetting,
  pathSetting,
  textSetting,
} from "../config/mod.ts";
import { parseApiKey } from "../http/mod.ts";
import { parseOrigin } from "../http/_internal.ts";
import { parseTileUrl, type TileServer } from "./parse_tile_url.ts";

/**
 * Requests a key may make at once after being idle (`RATE_LIMIT_BURST`'s
 * default). The official DataStream clients page and partition (one request
 * per location) without pausing and, but for Python's, without retrying a
 * 429: the shell client's download of the whole demo data partitioned over
 * its 200 locations, with 20 pages besides, is 221 requests. A bucket of 250
 * lets that through at once, while the sustained rate stays
 * `RATE_LIMIT_PER_SECOND` and `RATE_LIMIT_CONCURRENCY` keeps one request per
 * key in flight, so a burst never makes parallel load.
 */
export const DEFAULT_RATE_BURST = 250;

/** The water-data API's settings, read by `readSettings` from the environment. */
export const WATER_SETTINGS = {
  dataDir: pathSetting("DATA_DIR", {
    default: "data/datasets",
    accepts: "a folder",
    doc:
      "the datasets folder, loaded at start and again on `SIGHUP` or `POST /admin/datasets/reload`; the default may be missing (no datasets, until a reload finds it), a folder set must exist",
  }),
  datasetCacheDir: customSetting<string | undefined>("DATASET_CACHE_DIR", {
    default: undefined,
    defaultText: "<STATE_DIR>/dataset-cache",
    accepts: "a folder; empty for none",
    doc:
      "where each dataset is kept built (a snapshot, rebuilt when its `data.csv` changes), so that a restart reads it back instead of parsing the CSV; empty turns snapshots off (so does an empty `STATE_DIR` when this is unset)",
    parse: (text) => text.trim(),
    // Unset: undefined, under the state folder the app gives (STATE_DIR is read once, with
    // the storage settings; see datasetCacheDir); set empty: none.
    unset: (env) => (env["DATASET_CACHE_DIR"] !== undefined ? "" : undefined),
  }),
  apiKeysFile: pathSetting("API_KEYS_FILE", {
    default: "data/api_keys.json",
    emptyMeansNone: true,
    accepts: "a file; empty for none",
    doc:
      '`{"api_keys": [{"name", "key"}]}`, each key plain or `sha256:<64 hex>`; the default may be missing (no keys but `API_KEYS`), a file set must be readable',
  }),
  apiKeys: listSetting("API_KEYS", {
    accepts: "keys, plain or `sha256:<64 hex>`",
    item: (entry, index) => parseApiKey(`API_KEYS[${index + 1}]`, entry),
    secret: true,
    doc: "keys accepted in addition to the file's",
  }),
  adminApiKeys: listSetting("ADMIN_API_KEYS", {
    accepts: "keys, plain or `sha256:<64 hex>`",
    item: (entry, index) => parseApiKey(`ADMIN_API_KEYS[${index + 1}]`, entry),
    secret: true,
    doc:
      "keys of the datasets' admin routes (`POST /admin/datasets/reload`), sent as `Authorization: Bearer <key>`; none refuses them all (`SIGHUP` reloads all the same)",
  }),
  corsOrigins: listSetting("CORS_ORIGINS", {
    accepts: "origins such as `https://app.example.org`",
    item: parseOrigin,
    doc: "browser origins allowed; their `GET` requests may omit the key",
  }),
  rateLimitPerSecond: numberSetting("RATE_LIMIT_PER_SECOND", {
    default: 2,
    min: 0,
    doc: "requests per second per key (or origin), sustained; 0 for no limit",
  }),
  rateLimitBurst: integerSetting("RATE_LIMIT_BURST", {
    default: DEFAULT_RATE_BURST,
    min: 1,
    max: 1_000_000,
    doc:
      "requests a key may make at once after being idle (a token bucket of this size, refilled at `RATE_LIMIT_PER_SECOND`): sized so that the official clients' partitioned downloads of the demo data, which do not pause, finish; answers carry `RateLimit-Policy`, `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset`",
  }),
  rateLimitConcurrency: integerSetting("RATE_LIMIT_CONCURRENCY", {
    default: 1,
    min: 0,
    max: 1_000_000,
    doc: "requests per key in flight at once; 0 for no limit",
  }),
  rateLimitRedisUrl: customSetting<string>("RATE_LIMIT_REDIS_URL", {
    default: "",
    defaultText: "",
    accepts: "`redis://[user:password@]host:port[/db]`",
    doc:
      "count the per-key rate and concurrency limits in this Redis, so that every replica together allows what one allows; empty counts them in each process",
    parse: (text) => {
      if (text.trim() === "") return "";
      const url = URL.parse(text.trim());
      if (
        url === null || (url.protocol !== "redis:" && url.protocol !== "rediss:") ||
        url.hostname === ""
      ) throw new RangeError("expected redis://host:port");
      return text.trim();
    },
  }),
  queryTimeoutMs: integerSetting("QUERY_TIMEOUT_MS", {
    default: 30_000,
    min: 1,
    max: 3_600_000,
    doc: "a query running longer is answered 408",
  }),
  maxResponseBytes: integerSetting("MAX_RESPONSE_BYTES", {
    default: 32 * 1024 * 1024,
    min: 1024,
    max: 2 ** 31,
    doc: "a JSON page larger than this is answered 413 (CSV streams are not limited)",
  }),
  maxGroups: integerSetting("MAX_GROUPS", {
    default: 100_000,
    min: 1,
    max: 10_000_000,
    doc: "most groups an `$apply` may make; more is answered 400 `ERR_WATER_TOO_MANY_GROUPS`",
  }),
  renderCacheBytes: integerSetting("RENDER_CACHE_BYTES", {
    default: 64 * 1024 * 1024,
    min: 0,
    max: 2 ** 40,
    doc:
      "bytes of rendered rows (of pages of up to 1,000 rows) kept for reuse; 0 turns the cache off",
  }),
  mapTiles: customSetting<TileServer | undefined>("MAP_TILE_URL", {
    default: undefined,
    defaultText: "",
    accepts: "a tile URL template such as `https://tile.openstreetmap.org/{z}/{x}/{y}.png`",
    doc:
      "tiles under the explorer's map (`GET /`), from this server only (the page's Content-Security-Policy allows its origin); empty draws the map without tiles, offline",
    parse: parseTileUrl,
  }),
  mapTileAttribution: textSetting("MAP_TILE_ATTRIBUTION", {
    default: "",
    accepts: "text",
    doc:
      "credit the tile server asks for, shown under the explorer's map, e.g. `© OpenStreetMap contributors`",
  }),
} as const;

/** The water-data API's configuration. */
export type WaterConfig = ConfigOf<typeof WATER_SETTINGS>;

/**
 * The folder the datasets' snapshots are kept in: `DATASET_CACHE_DIR` when
 * set (empty for none), else `dataset-cache` in the state folder (none when
 * that is empty). The state folder comes from the app (`STATE_DIR`, read
 * with the storage settings), so that one setting is read in one place.
 * @param setting `DATASET_CACHE_DIR` as read: undefined when unset
 * @param stateDir the state folder, `STATE_DIR`; empty when state is kept in memory only
 * @returns the folder, or empty for no snapshots
 */
export function resolveDatasetCacheDir(setting: string | undefined, stateDir: string): string {
  if (setting !== undefined) return setting;
  return stateDir === "" ? "" : join(stateDir, "dataset-cache");
}

import { type Client, parseClients } from "../auth/mod.ts";
import { type ApiKey, parseApiKey } from "../http/mod.ts";
import { DEFAULT_RETRY_SCHEDULE, parseCidrList, parseRetrySchedule, type RetrySchedule } from "../relay/mod.ts";
import { ConfigError } from "./errors.ts";

/** Services the server can run. */
export const AVAILABLE_SERVICES = ["water", "sync", "relay"] as const;

/** Queue backends of the relay. */
export const STORAGE_TYPES = ["memory", "redis", "kafka"] as const;

/** A service name. */
export type ServiceName = (typeof AVAILABLE_SERVICES)[number];

/** The server's configuration, read from the environment. */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly services: readonly ServiceName[];
  readonly dataDir: string;
  /** Path of the API keys file; empty for none. */
  readonly apiKeysFile: string;
  /** Keys from `API_KEYS`, accepted in addition to the file's. */
  readonly apiKeys: readonly ApiKey[];
  readonly corsOrigins: readonly string[];
  readonly ratePerSecond: number;
  readonly maxConcurrent: number;
  readonly queryTimeoutMs: number;
  readonly maxResponseBytes: number;
  /** Bytes of rendered rows kept for reuse; 0 turns the cache off. */
  readonly renderCacheBytes: number;
  /** Origin for links in responses, instead of the request's `Host`. */
  readonly publicUrl: string | undefined;
  /** Path of the registered OAuth clients. */
  readonly clientsFile: string;
  readonly accessTokenTtlSeconds: number;
  readonly refreshTokenTtlSeconds: number;
  /** scrypt cost (N) for new passwords. */
  readonly passwordHashCost: number;
  /** Failed password logins per user name before logins are refused for a while. */
  readonly loginMaxFailures: number;
  /** Failed password logins per client address before its logins wait; 0 for no address limit. */
  readonly loginMaxFailuresPerAddress: number;
  /** Objects above which a diff or snapshot is answered 202 and computed in the background. */
  readonly syncQueueAboveObjects: number;
  /** Queued snapshots, diffs and patches a user may have at once. */
  readonly syncMaxQueuedPerUser: number;
  readonly revisionRetentionDays: number;
  readonly ticketRetentionSeconds: number;
  /** The relay's queue backend. */
  readonly storageType: (typeof STORAGE_TYPES)[number];
  /** Path of the relay's tenants and endpoints. */
  readonly tenantsFile: string;
  /** CIDRs deliveries may reach although private (the SSRF guard's allow list). */
  readonly allowPrivateTargets: readonly string[];
  readonly retrySchedule: RetrySchedule;
  readonly deliveryTimeoutMs: number;
  readonly maxPayloadBytes: number;
  /** Jobs the memory queue holds at most. */
  readonly queueCapacity: number;
  /** Deliveries in flight at most, in all. */
  readonly workerConcurrency: number;
  /** Deliveries in flight at most to one endpoint. */
  readonly endpointConcurrency: number;
  readonly secretOverlapSeconds: number;
  /** `ENCRYPTION_KEY` as given: a PEM key or the path of one; empty for none. */
  readonly encryptionKey: string;
  /** Where the memory queue is saved on shutdown and read at start; empty: nowhere. */
  readonly queueSnapshotFile: string;
  /** `REDIS_URL`, with `STORAGE_TYPE=redis`; empty otherwise. */
  readonly redisUrl: string;
  /** Prefix of the relay's Redis keys, so that several relays can share one Redis. */
  readonly redisPrefix: string;
  /** `KAFKA_BROKER`: bootstrap addresses, with `STORAGE_TYPE=kafka`; empty otherwise. */
  readonly kafkaBrokers: readonly string[];
  /** Prefix of the relay's topic names: `<prefix>.jobs`, `.retry`, `.dead`, `.state`. */
  readonly kafkaTopicPrefix: string;
  /** Partitions of the topics the relay creates at start-up. */
  readonly kafkaPartitions: number;
  /** The consumer group the relay processes share. */
  readonly kafkaGroupId: string;
  /** How long a relay process that stops heartbeating keeps its partitions, milliseconds. */
  readonly kafkaSessionTimeoutMs: number;
}

/** Environment variables, as `process.env` holds them. */
export type Environment = Readonly<Record<string, string | undefined>>;

/**
 * Reads the configuration from environment variables, with safe defaults.
 * @param env the environment
 * @returns the configuration
 * @throws {ConfigError} naming the variable and what it accepts
 * @example
 * ```ts
 * const config = readConfig({ PORT: "8080", RATE_LIMIT_PER_SECOND: "5" });
 * config.port; // 8080
 * ```
 */
export function readConfig(env: Environment): Config {
  const portVariable = env["WEBHOOK_PORT"] !== undefined && env["WEBHOOK_PORT"] !== "" ? "WEBHOOK_PORT" : "PORT";
  return {
    port: integer(env, portVariable, 8000, 0, 65_535),
    host: text(env, "HOST", "127.0.0.1"),
    services: services(env),
    dataDir: text(env, "DATA_DIR", "data/datasets"),
    apiKeysFile: env["API_KEYS_FILE"] ?? "data/api_keys.json",
    apiKeys: list(env, "API_KEYS").map((entry, i) => {
      try {
        return parseApiKey(`API_KEYS[${i + 1}]`, entry);
      } catch (error) {
        throw new ConfigError("API_KEYS", `Cannot start: API_KEYS entry ${i + 1} is not usable: ${(error as Error).message}`);
      }
    }),
    corsOrigins: list(env, "CORS_ORIGINS").map((entry) => origin("CORS_ORIGINS", entry)),
    ratePerSecond: number(env, "RATE_LIMIT_PER_SECOND", 2, 0),
    maxConcurrent: integer(env, "RATE_LIMIT_CONCURRENCY", 1, 0, 1_000_000),
    queryTimeoutMs: integer(env, "QUERY_TIMEOUT_MS", 30_000, 1, 3_600_000),
    maxResponseBytes: integer(env, "MAX_RESPONSE_BYTES", 32 * 1024 * 1024, 1024, 2 ** 31),
    renderCacheBytes: integer(env, "RENDER_CACHE_BYTES", 64 * 1024 * 1024, 0, 2 ** 40),
    publicUrl: env["PUBLIC_URL"] === undefined || env["PUBLIC_URL"] === ""
      ? undefined
      : origin("PUBLIC_URL", env["PUBLIC_URL"]),
    clientsFile: text(env, "CLIENTS_FILE", "data/clients.json"),
    accessTokenTtlSeconds: integer(env, "ACCESS_TOKEN_TTL_SECONDS", 3600, 1, 366 * 24 * 3600),
    refreshTokenTtlSeconds: integer(env, "REFRESH_TOKEN_TTL_SECONDS", 30 * 24 * 3600, 1, 10 * 366 * 24 * 3600),
    passwordHashCost: powerOfTwo(env, "PASSWORD_HASH_COST", 16_384),
    loginMaxFailures: integer(env, "LOGIN_MAX_FAILURES", 5, 1, 1000),
    loginMaxFailuresPerAddress: integer(env, "LOGIN_MAX_FAILURES_PER_ADDRESS", 20, 0, 1_000_000),
    syncQueueAboveObjects: integer(env, "SYNC_QUEUE_ABOVE_OBJECTS", 1000, 0, 100_000_000),
    syncMaxQueuedPerUser: integer(env, "SYNC_MAX_QUEUED_PER_USER", 16, 1, 100_000),
    revisionRetentionDays: integer(env, "REVISION_RETENTION_DAYS", 30, 1, 36_500),
    ticketRetentionSeconds: integer(env, "TICKET_RETENTION_SECONDS", 600, 1, 7 * 24 * 3600),
    storageType: storageType(env),
    tenantsFile: text(env, "TENANTS_FILE", "data/tenants.json"),
    allowPrivateTargets: cidrs(env),
    retrySchedule: retrySchedule(env),
    deliveryTimeoutMs: integer(env, "DELIVERY_TIMEOUT_MS", 15_000, 100, 300_000),
    maxPayloadBytes: integer(env, "MAX_PAYLOAD_BYTES", 262_144, 64, 16 * 1024 * 1024),
    queueCapacity: integer(env, "QUEUE_CAPACITY", 100_000, 1, 100_000_000),
    workerConcurrency: integer(env, "WORKER_CONCURRENCY", 64, 0, 10_000),
    endpointConcurrency: integer(env, "ENDPOINT_CONCURRENCY", 8, 1, 10_000),
    secretOverlapSeconds: integer(env, "SECRET_ROTATION_OVERLAP_SECONDS", 86_400, 0, 30 * 86_400),
    encryptionKey: (env["ENCRYPTION_KEY"] ?? "").trim(),
    queueSnapshotFile: (env["QUEUE_SNAPSHOT_FILE"] ?? "var/relay-queue.json").trim(),
    redisUrl: redisUrl(env),
    redisPrefix: redisPrefix(env),
    kafkaBrokers: kafkaBrokers(env),
    kafkaTopicPrefix: kafkaName(env, "KAFKA_TOPIC_PREFIX", "tributary"),
    kafkaPartitions: integer(env, "KAFKA_PARTITIONS", 8, 1, 10_000),
    kafkaGroupId: kafkaName(env, "KAFKA_GROUP_ID", "tributary-relay"),
    // Kafka brokers accept 6 s to 30 min by default (group.min/max.session.timeout.ms).
    kafkaSessionTimeoutMs: integer(env, "KAFKA_SESSION_TIMEOUT_MS", 30_000, 6000, 1_800_000),
  };
}

function kafkaBrokers(env: Environment): string[] {
  const brokers = list(env, "KAFKA_BROKER");
  if ((env["STORAGE_TYPE"] ?? "").trim() !== "kafka") return brokers;
  if (brokers.length === 0) {
    throw new ConfigError("KAFKA_BROKER", "Cannot start: STORAGE_TYPE=kafka needs KAFKA_BROKER, e.g. 127.0.0.1:9092 (comma-separated for several)");
  }
  for (const broker of brokers) {
    const match = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/.exec(broker);
    if (match === null || Number(match[2]) < 1 || Number(match[2]) > 65_535) {
      throw new ConfigError("KAFKA_BROKER", `Cannot start: KAFKA_BROKER must list host:port addresses, comma-separated: "${broker}" is not one`);
    }
  }
  return brokers;
}

function kafkaName(env: Environment, name: string, fallback: string): string {
  const value = text(env, name, fallback).trim();
  // Kafka's rule for topic and group names, less room for our suffixes.
  if (!/^[A-Za-z0-9._-]{1,200}$/.test(value)) {
    throw new ConfigError(name, `Cannot start: ${name} must be 1 to 200 letters, digits, '.', '_' or '-': current value is "${value}"`);
  }
  return value;
}

function redisUrl(env: Environment): string {
  const value = (env["REDIS_URL"] ?? "").trim();
  if ((env["STORAGE_TYPE"] ?? "").trim() !== "redis") return value;
  if (value === "") {
    throw new ConfigError("REDIS_URL", "Cannot start: STORAGE_TYPE=redis needs REDIS_URL, e.g. redis://127.0.0.1:6379");
  }
  const url = URL.parse(value);
  if (url === null || (url.protocol !== "redis:" && url.protocol !== "rediss:") || url.hostname === "") {
    throw new ConfigError(
      "REDIS_URL",
      `Cannot start: REDIS_URL must be redis://[user:password@]host[:port][/db] or rediss://...: current value is "${redactUrl(value)}"`,
    );
  }
  return value;
}

function redisPrefix(env: Environment): string {
  const value = text(env, "REDIS_KEY_PREFIX", "{tributary}");
  if (/[\s]/.test(value) || value.length > 100) {
    throw new ConfigError("REDIS_KEY_PREFIX", `Cannot start: REDIS_KEY_PREFIX must be up to 100 characters without spaces: current value is "${value}"`);
  }
  return value;
}

/**
 * A URL with its password hidden, for messages and logs.
 * @param value a URL, or any text
 * @returns the URL with `***` for its password; the text as given when it is not a URL
 * @example
 * ```ts
 * redactUrl("redis://app:s3cret@db:6379"); // "redis://app:***@db:6379"
 * ```
 */
export function redactUrl(value: string): string {
  const url = URL.parse(value);
  if (url === null || url.password === "") return value;
  url.password = "***";
  return url.href;
}

function storageType(env: Environment): (typeof STORAGE_TYPES)[number] {
  const value = text(env, "STORAGE_TYPE", "memory").trim();
  const found = STORAGE_TYPES.find((type) => type === value);
  if (found === undefined) {
    throw new ConfigError("STORAGE_TYPE", `Cannot start: STORAGE_TYPE must be one of ${STORAGE_TYPES.join(", ")}: current value is "${value}"`);
  }
  return found;
}

function cidrs(env: Environment): readonly string[] {
  try {
    return parseCidrList(env["ALLOW_PRIVATE_TARGETS"] ?? "");
  } catch (error) {
    throw new ConfigError("ALLOW_PRIVATE_TARGETS", `Cannot start: ALLOW_PRIVATE_TARGETS must be comma-separated CIDRs such as 127.0.0.1/32: ${(error as Error).message}`);
  }
}

function retrySchedule(env: Environment): RetrySchedule {
  const given = env["RETRY_SCHEDULE"];
  let delaysMs: readonly number[] = DEFAULT_RETRY_SCHEDULE.delaysMs;
  if (given !== undefined && given.trim() !== "") {
    try {
      delaysMs = parseRetrySchedule(given);
    } catch (error) {
      throw new ConfigError("RETRY_SCHEDULE", `Cannot start: RETRY_SCHEDULE is not usable: ${(error as Error).message}`);
    }
  }
  const maxAttempts = integer(env, "MAX_ATTEMPTS", delaysMs.length + 1, 1, 1000);
  return { kind: "fixed", delaysMs, maxAttempts, jitter: DEFAULT_RETRY_SCHEDULE.jitter ?? 0.2 };
}

/**
 * Reads the registered OAuth clients file: a JSON array of
 * `{"client_id", "client_secret"?, "grant_types", "scopes"}`.
 * @param text the file's text
 * @param file the file's path, for messages
 * @returns the clients, and the plain secrets by client id (to print for a demo)
 * @throws {ConfigError} naming CLIENTS_FILE and the entry at fault
 */
export function readClientsFile(text: string, file: string): { clients: Client[]; plain: Map<string, string> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError("CLIENTS_FILE", `Cannot start: ${file} is not valid JSON: ${(error as Error).message}`);
  }
  let clients: Client[];
  try {
    clients = parseClients(parsed);
  } catch (error) {
    throw new ConfigError("CLIENTS_FILE", `Cannot start: ${file}: ${(error as Error).message}`);
  }
  const plain = new Map<string, string>();
  for (const entry of parsed as Record<string, unknown>[]) {
    const secret = entry["client_secret"];
    if (typeof secret === "string" && !secret.trim().startsWith("sha256:")) plain.set(String(entry["client_id"]), secret);
  }
  return { clients, plain };
}

function powerOfTwo(env: Environment, name: string, fallback: number): number {
  const value = integer(env, name, fallback, 2, 2 ** 20);
  if ((value & (value - 1)) !== 0) {
    throw new ConfigError(name, `Cannot start: ${name} must be a power of two from 2 to 1048576: current value is "${env[name]}"`);
  }
  return value;
}

/**
 * Reads an API keys file: `{"api_keys": [{"name": "...", "key": "..."}]}`,
 * each key plain or `sha256:<64 hex digits>`.
 * @param text the file's text
 * @param file the file's path, for messages
 * @returns the keys, and the plain ones by name (to print for a demo)
 * @throws {ConfigError} naming the file and the entry at fault
 */
export function readApiKeysFile(text: string, file: string): { keys: ApiKey[]; plain: Map<string, string> } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ConfigError("API_KEYS_FILE", `Cannot start: ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const entries = typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)
    ? (parsed as Record<string, unknown>)["api_keys"]
    : undefined;
  if (!Array.isArray(entries)) {
    throw new ConfigError("API_KEYS_FILE", `Cannot start: ${file} must hold {"api_keys": [{"name", "key"}, ...]}`);
  }
  const keys: ApiKey[] = [];
  const plain = new Map<string, string>();
  entries.forEach((entry: unknown, i) => {
    const record = typeof entry === "object" && entry !== null ? (entry as Record<string, unknown>) : {};
    const name = record["name"];
    const key = record["key"];
    if (typeof name !== "string" || name === "" || typeof key !== "string") {
      throw new ConfigError("API_KEYS_FILE", `Cannot start: ${file} entry ${i + 1} needs a "name" and a "key" string`);
    }
    try {
      keys.push(parseApiKey(name, key));
    } catch (error) {
      throw new ConfigError("API_KEYS_FILE", `Cannot start: ${file} entry ${i + 1}: ${(error as Error).message}`);
    }
    if (!key.trim().startsWith("sha256:")) plain.set(name, key);
  });
  return { keys, plain };
}

function text(env: Environment, name: string, fallback: string): string {
  const value = env[name];
  return value === undefined || value === "" ? fallback : value;
}

function list(env: Environment, name: string): string[] {
  const value = env[name];
  if (value === undefined || value.trim() === "") return [];
  return value.split(",").map((part) => part.trim()).filter((part) => part !== "");
}

function integer(env: Environment, name: string, fallback: number, min: number, max: number): number {
  const value = env[name];
  if (value === undefined || value === "") return fallback;
  const parsed = /^[0-9]+$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isSafeInteger(parsed) || parsed < min || parsed > max) {
    throw new ConfigError(name, `Cannot start: ${name} must be an integer from ${min} to ${max}: current value is "${value}"`);
  }
  return parsed;
}

function number(env: Environment, name: string, fallback: number, min: number): number {
  const value = env[name];
  if (value === undefined || value === "") return fallback;
  const parsed = /^[0-9]+(\.[0-9]+)?$/.test(value.trim()) ? Number(value.trim()) : Number.NaN;
  if (!Number.isFinite(parsed) || parsed < min) {
    throw new ConfigError(name, `Cannot start: ${name} must be a number >= ${min}: current value is "${value}"`);
  }
  return parsed;
}

function origin(name: string, entry: string): string {
  const url = URL.parse(entry);
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:") || entry.replace(/\/$/, "") !== url.origin) {
    throw new ConfigError(
      name,
      `Cannot start: ${name} must list origins like https://app.example.org (scheme, host, optional port, no path): current value is "${entry}"`,
    );
  }
  return url.origin;
}

function services(env: Environment): ServiceName[] {
  const names = list(env, "SERVICES");
  if (names.length === 0) return [...AVAILABLE_SERVICES];
  return names.map((name) => {
    const found = AVAILABLE_SERVICES.find((service) => service === name);
    if (found === undefined) {
      throw new ConfigError(
        "SERVICES",
        `Cannot start: SERVICES lists "${name}", which is not available; available: ${AVAILABLE_SERVICES.join(", ")}`,
      );
    }
    return found;
  });
}

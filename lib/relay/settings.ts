import {
  choiceSetting,
  ConfigError,
  type ConfigOf,
  customSetting,
  type Environment,
  integerSetting,
  pathSetting,
  redactUrl,
  textSetting,
} from "../config/mod.ts";
import { parseCidrList } from "./address_policy.ts";
import { DEFAULT_RETRY_SCHEDULE, parseRetrySchedule } from "./backoff.ts";

/** Queue backends of the relay. */
export const STORAGE_TYPES = ["memory", "redis", "kafka"] as const;

/** A queue backend of the relay. */
export type StorageType = (typeof STORAGE_TYPES)[number];

// Kafka's rule for topic and group names, less room for our suffixes.
const KAFKA_NAME = /^[A-Za-z0-9._-]{1,200}$/;
const KAFKA_NAME_ACCEPTS = "1 to 200 letters, digits, '.', '_' or '-'";
const BROKER = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/;

function storageIs(env: Environment, type: StorageType): boolean {
  return (env["STORAGE_TYPE"] ?? "").trim() === type;
}

/** The `unset` of a setting that `STORAGE_TYPE=<type>` requires: an error then, else `none`. */
function requiredWith<T>(
  type: StorageType,
  variable: string,
  example: string,
  none: T,
): (env: Environment) => T {
  return (env) => {
    if (storageIs(env, type)) {
      throw new ConfigError(
        variable,
        `Cannot start: STORAGE_TYPE=${type} needs ${variable}, e.g. ${example}`,
      );
    }
    return none;
  };
}

/** The relay's settings, read by `readSettings` from the environment. */
export const RELAY_SETTINGS = {
  storageType: choiceSetting("STORAGE_TYPE", {
    choices: STORAGE_TYPES,
    default: "memory",
    doc: "the relay's queue",
  }),
  tenantsFile: pathSetting("TENANTS_FILE", {
    default: "data/tenants.json",
    accepts: "a file",
    doc:
      '`{"tenants": [{"id", "api_keys", "endpoints": [{"id", "url", "events", "secret", "public_key"?, "rate_limit_per_second"?}]}]}`; keys plain or `sha256:<64 hex>`; the default may be missing (no tenants), a file set must be readable',
  }),
  allowPrivateTargets: customSetting("ALLOW_PRIVATE_TARGETS", {
    default: [] as readonly string[],
    defaultText: "",
    accepts: "comma-separated CIDRs such as `127.0.0.1/32`",
    doc: "ranges deliveries may reach although private",
    parse: (text) => parseCidrList(text),
  }),
  retryDelaysMs: customSetting("RETRY_SCHEDULE", {
    default: DEFAULT_RETRY_SCHEDULE.delaysMs,
    defaultText: "5s,5m,30m,2h,5h,10h,10h",
    accepts: "comma-separated delays with a unit `ms`, `s`, `m` or `h`",
    doc: "delays before each retry; the last repeats",
    parse: (text) => parseRetrySchedule(text),
  }),
  maxAttempts: customSetting<number | undefined>("MAX_ATTEMPTS", {
    default: undefined,
    defaultText: "schedule length + 1",
    accepts: "an integer from 1 to 1000",
    doc: "delivery attempts in all before the dead letters",
    parse: (text) => {
      const value = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
      if (!Number.isSafeInteger(value) || value < 1 || value > 1000) {
        throw new RangeError(`current value is "${text}"`);
      }
      return value;
    },
  }),
  deliveryTimeoutMs: integerSetting("DELIVERY_TIMEOUT_MS", {
    default: 15_000,
    min: 100,
    max: 300_000,
    doc: "a delivery without an answer by then is a timeout",
  }),
  maxPayloadBytes: integerSetting("MAX_PAYLOAD_BYTES", {
    default: 262_144,
    min: 64,
    max: 16 * 1024 * 1024,
    doc: "largest accepted webhook body",
  }),
  queueCapacity: integerSetting("QUEUE_CAPACITY", {
    default: 100_000,
    min: 1,
    max: 100_000_000,
    doc:
      "jobs waiting or in flight the queue holds (on Redis: over all processes); more are answered 503",
  }),
  workerConcurrency: integerSetting("WORKER_CONCURRENCY", {
    default: 64,
    min: 0,
    max: 10_000,
    doc:
      "deliveries in flight at once; `0` makes an intake-only process that queues webhooks and delivers none",
  }),
  endpointConcurrency: integerSetting("ENDPOINT_CONCURRENCY", {
    default: 8,
    min: 1,
    max: 10_000,
    doc: "deliveries in flight at once to one endpoint",
  }),
  secretOverlapSeconds: integerSetting("SECRET_ROTATION_OVERLAP_SECONDS", {
    default: 86_400,
    min: 0,
    max: 30 * 86_400,
    doc: "how long a rotated-out signing secret keeps signing",
  }),
  encryptionKey: textSetting("ENCRYPTION_KEY", {
    default: "",
    accepts: "a PEM RSA key (public, or private for its public half), or the path of one",
    doc: "the key to encrypt for every endpoint without its own `public_key`",
  }),
  redis: {
    url: customSetting("REDIS_URL", {
      default: "",
      defaultText: "",
      accepts: "`redis://[user:password@]host[:port][/db]` or `rediss://...`",
      doc: "the Redis server, with `STORAGE_TYPE=redis` (required then)",
      unset: requiredWith("redis", "REDIS_URL", "redis://127.0.0.1:6379", ""),
      parse: (text, env) => {
        if (!storageIs(env, "redis")) return text;
        const url = URL.parse(text);
        if (
          url === null || (url.protocol !== "redis:" && url.protocol !== "rediss:") ||
          url.hostname === ""
        ) {
          throw new ConfigError(
            "REDIS_URL",
            `Cannot start: REDIS_URL must be redis://[user:password@]host[:port][/db] or rediss://...: current value is "${
              redactUrl(text)
            }"`,
          );
        }
        return text;
      },
    }),
    keyPrefix: textSetting("REDIS_KEY_PREFIX", {
      default: "{tributary}",
      pattern: /^\S{1,100}$/,
      accepts: "up to 100 characters without spaces",
      doc:
        "prefix of the relay's Redis keys; relays with different prefixes keep separate queues on one Redis (the `{}` hash tag keeps them in one cluster slot)",
    }),
  },
  kafka: {
    brokers: customSetting("KAFKA_BROKER", {
      default: [] as readonly string[],
      defaultText: "",
      accepts: "comma-separated `host:port` addresses",
      doc: "bootstrap brokers, with `STORAGE_TYPE=kafka` (required then)",
      unset: requiredWith<readonly string[]>(
        "kafka",
        "KAFKA_BROKER",
        "127.0.0.1:9092 (comma-separated for several)",
        [],
      ),
      parse: (text, env) => {
        const brokers = text.split(",").map((part) => part.trim()).filter((part) => part !== "");
        if (!storageIs(env, "kafka")) return brokers;
        for (const broker of brokers) {
          const match = BROKER.exec(broker);
          if (match === null || Number(match[2]) < 1 || Number(match[2]) > 65_535) {
            throw new ConfigError(
              "KAFKA_BROKER",
              `Cannot start: KAFKA_BROKER must list host:port addresses, comma-separated: "${broker}" is not one`,
            );
          }
        }
        return brokers;
      },
    }),
    topicPrefix: textSetting("KAFKA_TOPIC_PREFIX", {
      default: "tributary",
      pattern: KAFKA_NAME,
      accepts: KAFKA_NAME_ACCEPTS,
      doc:
        "topics `<prefix>.jobs`, `.retry`, `.dead`, `.state` and `.config` (the endpoints, one partition)",
    }),
    partitions: integerSetting("KAFKA_PARTITIONS", {
      default: 8,
      min: 1,
      max: 10_000,
      doc:
        "partitions of the topics the relay creates at start-up (the most relay processes that can share the work)",
    }),
    groupId: textSetting("KAFKA_GROUP_ID", {
      default: "tributary-relay",
      pattern: KAFKA_NAME,
      accepts: KAFKA_NAME_ACCEPTS,
      doc: "the consumer group the relay processes share",
    }),
    // Kafka brokers accept 6 s to 30 min by default (group.min/max.session.timeout.ms).
    sessionTimeoutMs: integerSetting("KAFKA_SESSION_TIMEOUT_MS", {
      default: 30_000,
      min: 6000,
      max: 1_800_000,
      doc:
        "a relay process silent this long loses its partitions to the others, which deliver its unfinished jobs (within the brokers' limits)",
    }),
  },
} as const;

/** The relay's configuration. */
export type RelayConfig = ConfigOf<typeof RELAY_SETTINGS>;

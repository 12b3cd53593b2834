import {
  ConfigError,
  type ConfigOf,
  customSetting,
  integerSetting,
  redactUrl,
  textSetting,
} from "../config/mod.ts";

/** Where state is kept: the settings of `lib/storage`, read by `readSettings`. */
export const STORAGE_SETTINGS = {
  stateDir: textSetting("STATE_DIR", {
    default: "var",
    emptyMeansNone: true,
    accepts: "a folder; empty for none",
    doc:
      "where users, tokens and synced data are kept (a journal per store, for one process at a time, which locks it); a folder not there is made at the first write or when the server listens; empty keeps them in memory only, lost at a restart",
  }),
  stateLockLeaseMs: integerSetting("STATE_LOCK_LEASE_MS", {
    default: 20_000,
    min: 1000,
    max: 600_000,
    doc:
      "how long STATE_DIR's lock stays live without its holder renewing it (every quarter of this): the lock of a process of another host (a container on a shared volume), or of one that stopped renewing, is taken over only once seen unchanged this long; a process of this host that is gone is taken over at once",
  }),
  databaseUrl: customSetting("DATABASE_URL", {
    default: "",
    defaultText: "",
    accepts: "`postgres://user[:password]@host[:port]/database`",
    doc:
      "keeps users, tokens and synced data in PostgreSQL instead of STATE_DIR, shared by every process on it (needs `npm install pg`); name the user: without one, `PGUSER` or the login name (`USER`) is sent, or none",
    parse: (text) => {
      const url = URL.parse(text);
      if (
        url === null || (url.protocol !== "postgres:" && url.protocol !== "postgresql:") ||
        url.hostname === ""
      ) {
        throw new ConfigError(
          "DATABASE_URL",
          `Cannot start: DATABASE_URL must be postgres://user[:password]@host[:port]/database: current value is "${
            redactUrl(text)
          }"`,
        );
      }
      return text;
    },
  }),
  databasePoolSize: integerSetting("DATABASE_POOL_SIZE", {
    default: 10,
    min: 1,
    max: 1000,
    doc: "connections to PostgreSQL at most, per process",
  }),
  databaseStatementTimeoutMs: integerSetting("DATABASE_STATEMENT_TIMEOUT_MS", {
    default: 10_000,
    min: 100,
    max: 600_000,
    doc:
      "a statement running longer is cancelled, and its request answered 503; one not answered within it plus 1 s (a connection that hangs, the wait for a free connection included) is given up and its connection closed, its request answered 503 likewise",
  }),
} as const;

/** Where state is kept. */
export type StorageConfig = ConfigOf<typeof STORAGE_SETTINGS>;

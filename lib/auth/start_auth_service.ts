import { readConfigPath } from "../config/mod.ts";
import { type RunningService, type ServiceCredential, type ServiceLog } from "../http/mod.ts";
import { startPeriodicTask } from "../http/_internal.ts";
import { OutageLog } from "../log/mod.ts";
import { StorageError } from "../storage/mod.ts";
import { createAuthService } from "./create_auth_service.ts";
import { AUTH_ERROR_STATUS } from "./error_status.ts";
import { LoginThrottle } from "./login_throttle.ts";
import { readClientsFile } from "./read_clients_file.ts";
import type { AuthConfig } from "./settings.ts";
import { TokenService } from "./token_service.ts";
import type { AuthStore, LoginLimiter, UserRecord } from "./types.ts";

/** Options of {@linkcode startAuthService}. */
export interface StartAuthServiceOptions {
  /** Where users and tokens live. */
  store: AuthStore;
  /** Clock in epoch milliseconds, e.g. `Date.now`. */
  now: () => number;
  /** Random bytes, e.g. `pooledRandom()`. */
  random: (size: number) => Uint8Array;
  /**
   * Counts failed logins.
   * @default a `LoginThrottle` in memory, with the limits of the configuration
   */
  throttle?: LoginLimiter;
  /** Called once a user has signed up. */
  onUserCreated?: (user: UserRecord) => void | Promise<void>;
  /** Writes a new user with the rest of the account (see `TokenServiceOptions.register`). */
  register?: (user: UserRecord) => Promise<boolean>;
  /**
   * Runs a task periodically (expired tokens are swept every minute); returns a stop function.
   * @default real timers that do not keep the process alive
   */
  every?: (task: () => void, ms: number) => () => void;
  /**
   * Where a start without clients is said (the default `CLIENTS_FILE`
   * missing), and a sweep that fails (one line when sweeps start failing,
   * one when they work again).
   * @default nowhere
   */
  log?: ServiceLog;
  /**
   * Whether the store logs its own outages (a PostgreSQL pool logs one as
   * two lines): a sweep failing because the store cannot be reached
   * (`ERR_STORAGE_UNAVAILABLE`) then adds no line of its own.
   * @default {false}
   */
  storeLogsOutages?: boolean;
}

/** The token service as an app runs it, with the {@linkcode TokenService} other services check tokens with. */
export interface StartedAuthService {
  readonly service: RunningService;
  readonly tokens: TokenService;
}

/**
 * Starts the OAuth 2.0 token service and sign-up as an app runs them: reads
 * `CLIENTS_FILE` (left at its default and missing: no clients, said in one
 * line of the log), builds the {@linkcode TokenService}, sweeps expired tokens
 * every minute, and describes the clients (secrets given in plain text
 * included, for a demo).
 * @param config the token service's settings
 * @param options the store, clock, randomness and sign-up hook
 * @returns the running service and its token service
 * @throws {ConfigError} naming CLIENTS_FILE when a file it names cannot be read or used
 * @example
 * ```ts
 * const { service, tokens } = await startAuthService(readSettings(AUTH_SETTINGS, process.env), {
 *   store: new MemoryAuthStore(),
 *   now: Date.now,
 *   random: pooledRandom(),
 * });
 * ```
 */
export async function startAuthService(
  config: AuthConfig,
  options: StartAuthServiceOptions,
): Promise<StartedAuthService> {
  const text = await readConfigPath(config.clientsFile, "CLIENTS_FILE");
  if (text === undefined) {
    options.log?.info(
      `Token service: no OAuth clients: CLIENTS_FILE ${config.clientsFile.path} does not exist; add one with npx tributary client add`,
    );
  }
  const { clients, plain } = text === undefined
    ? { clients: [], plain: new Map<string, string>() }
    : readClientsFile(text, config.clientsFile.path);
  const tokens = new TokenService({
    store: options.store,
    clients,
    now: options.now,
    random: options.random,
    throttle: options.throttle ?? new LoginThrottle({
      now: options.now,
      maxPerUser: config.loginMaxFailures,
      maxPerName: config.loginMaxFailuresPerName,
      maxPerAddress: config.loginMaxFailuresPerAddress,
    }),
    ...(options.register === undefined ? {} : { register: options.register }),
    accessTtlSeconds: config.accessTokenTtlSeconds,
    refreshTtlSeconds: config.refreshTokenTtlSeconds,
    refreshReuseIntervalSeconds: config.refreshReuseIntervalSeconds,
    passwordCost: config.passwordHashCost,
  });
  const handler = createAuthService(
    tokens,
    options.onUserCreated === undefined ? {} : { onUserCreated: options.onUserCreated },
  );
  // A sweep that fails (the database away) is tried again the next minute: never an unhandled rejection.
  const sweeps = new OutageLog(
    options.log ?? { info: () => {}, error: () => {} },
    "Auth: sweeping expired tokens",
    options.now,
    { subject: "task" },
  );
  const stop = startPeriodicTask(() => options.store.sweep(options.now()), {
    everyMs: 60_000,
    outcomes: sweeps,
    countedElsewhere: (error) =>
      options.storeLogsOutages === true && error instanceof StorageError &&
      error.code === "ERR_STORAGE_UNAVAILABLE",
    ...(options.every === undefined ? {} : { every: options.every }),
  });
  const credentials: ServiceCredential[] = [];
  const notes: string[] = [];
  for (const client of clients) {
    const what = `${[...client.grantTypes].join(", ")}; scopes ${client.scopes.join(" ")}`;
    const secret = plain.get(client.id);
    if (secret !== undefined) {
      credentials.push({
        label: `OAuth client "${client.id}" secret (${what})`,
        value: secret,
        setting: "CLIENTS_FILE",
        file: config.clientsFile.path,
      });
    } else {notes.push(
        `OAuth client "${client.id}" (${
          client.secretHash === undefined ? "public" : "confidential"
        }): ${what}`,
      );}
  }
  const service: RunningService = {
    errorStatus: AUTH_ERROR_STATUS,
    name: "sync",
    prefixes: ["/oauth2", "/.well-known/oauth-authorization-server", "/api/v2/sign-up"],
    handler,
    describe: (origin) => ({
      endpoints: [
        { label: "Token endpoint", url: `${origin}/oauth2/token` },
        { label: "Sign-up", url: `${origin}/api/v2/sign-up` },
      ],
      credentials,
      notes,
    }),
    drain: () => stop(),
    close: () => Promise.resolve(),
  };
  return { service, tokens };
}

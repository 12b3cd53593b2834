import type { AuthStore } from "../auth/mod.ts";
import type { Handler, RunningService, ServiceDescription, ServiceLog } from "../http/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { MetricsRegistry } from "../metrics/mod.ts";
import type { Deliver } from "../relay/mod.ts";
import type { SyncStore } from "../sync/mod.ts";
import type { Backends } from "./open_backends.ts";
import type { GuardedProcess } from "./process_guard.ts";
import type { Config } from "./read_config.ts";

// The shapes of an app: what a host may replace, what a module gets, what a
// started app serves.

/** What a host may replace when it builds an app: clocks, randomness, stores, the log, more services. */
export interface AppOverrides {
  /**
   * Wall clock, milliseconds since the epoch (tokens, revisions, deliveries).
   * @default {Date.now}
   */
  now?: () => number;
  /**
   * Monotonic clock, milliseconds (rate limits, deadlines, request durations).
   * @default {() => performance.now()}
   */
  monotonic?: () => number;
  /**
   * Random bytes (tokens, ids, secrets, JWE keys).
   * @default {pooledRandom()}
   */
  random?: (size: number) => Uint8Array;
  /**
   * Where notes, survived failures and the access log go: a logger of
   * lib/log, or a plain `{ info, error }` log (fields then appended as JSON).
   * @default standard output, as `LOG_LEVEL` and `LOG_FORMAT` say
   */
  log?: Logger | ServiceLog;
  /** The token service's store. @default a new `MemoryAuthStore` */
  authStore?: AuthStore;
  /** The sync API's store. @default a new `MemorySyncStore` */
  syncStore?: SyncStore;
  /** The relay's delivery function. @default HTTP with the SSRF guard */
  deliver?: Deliver;
  /**
   * The modules to run instead of those `SERVICES` names (each domain's
   * module value: `WATER_MODULE`, `ACCOUNTS_MODULE`, `RELAY_MODULE`, or one
   * of the host's), started in this order: `createApp(config, { modules:
   * [WATER_MODULE] })` embeds the water API alone.
   * @default the built-in modules `SERVICES` names, in the order water, sync, relay
   */
  modules?: readonly ServiceModule[];
  /**
   * More services to run beside the modules, started after them and
   * mounted, measured and drained the same way.
   */
  services?: readonly ((app: AppContext) => Promise<RunningService>)[];
  /**
   * Longest time {@linkcode App.close} may take before it gives up.
   * @default {30000}
   */
  closeTimeoutMs?: number;
  /**
   * Longest time requests in flight get to finish at close, before the services drain.
   * @default {5000}
   */
  requestDrainMs?: number;
}

/** What a module, or an added service, gets from the app it runs in. */
export interface AppContext {
  readonly config: Config;
  readonly metrics: MetricsRegistry;
  readonly log: Logger;
  readonly now: () => number;
  readonly monotonic: () => number;
  readonly random: (size: number) => Uint8Array;
  /** The backends the modules share: the state folder and the database pool. */
  readonly backends: Backends;
  /** Stores the host gave the token and sync service, instead of those the configuration chooses. */
  readonly stores?: { readonly auth: AuthStore; readonly sync: SyncStore };
  /** The relay's delivery function, when the host replaces HTTP. */
  readonly deliver?: Deliver;
}

/**
 * A module of an app: a domain's services, started from the configuration
 * and the app's context (a domain's module value declares the parts of
 * them it reads; the app gives it the whole).
 */
export interface ServiceModule {
  /** As `SERVICES` names it, e.g. `water`. */
  readonly name: string;
  /**
   * Starts the module's services.
   * @param config the app's configuration
   * @param context the app's registry, clocks, randomness, log and backends
   * @returns its running services, in the order they mount
   */
  start(config: Config, context: AppContext): Promise<readonly RunningService[]>;
}

/** What a started app serves: its services' entry points, demo credentials and notes, together. */
export interface AppDescription extends ServiceDescription {
  /** The modules it runs, by name in the order they started (`water`, `sync`, `relay` for the built-in ones). */
  readonly services: readonly string[];
}

/** Where {@linkcode App.listen} listens. */
export interface ListeningAddress {
  /** The local URL it answers on, e.g. `http://127.0.0.1:41234`. */
  readonly url: string;
  readonly port: number;
  /** The URL users reach it by: `PUBLIC_URL` when set, else {@linkcode url} (with `localhost` for a wildcard host). */
  readonly publicUrl: string;
}

/** The services of a configuration, composed: one handler, a start, a bounded close. */
export interface App {
  readonly config: Config;
  /** Where the app logs (the server's start-up lines and signals too). */
  readonly log: Logger;
  /** The registry `/metrics` serves. */
  readonly metrics: MetricsRegistry;
  /**
   * Answers every request: the services' routes, `/metrics`, and `/health`,
   * `/health/live` and `/health/ready` (the latter 200 only once started
   * with every backend the services need answering).
   * Before {@linkcode App.start} finishes and once {@linkcode App.close}
   * begins, service routes answer 503 with `Retry-After`.
   */
  readonly handler: Handler;
  /**
   * Loads data, connects stores, starts workers; resolves once every service
   * answers. What the defaults name and a new project lacks (the datasets,
   * API keys, OAuth clients and tenants files of `data/`) is started without,
   * each said in one line of the log; and a `STATE_DIR` that is not there yet
   * is not made until the first write or {@linkcode App.listen}.
   * @throws {ConfigError} naming the variable whose value, or the file it names, cannot be used
   */
  start(): Promise<void>;
  /**
   * Serves {@linkcode App.handler} over HTTP/1.1 (after {@linkcode App.start}); `close` stops it.
   * The state folder is made and locked first, if no write has done it yet.
   * @throws {ConfigError} naming STATE_DIR when its folder cannot be made or another process holds it, PORT when the port is taken
   */
  listen(options?: { port?: number; host?: string }): Promise<ListeningAddress>;
  /**
   * What the started app serves.
   * @param origin where it is served, e.g. `http://127.0.0.1:8000`
   */
  describe(origin: string): AppDescription;
  /**
   * Loads the services' data again without a restart (the water datasets),
   * as `SIGHUP` asks; each service logs what it loaded. Requests are answered
   * meanwhile, from the data before until the new data is in place.
   * @throws {Error} when the app is not started, or a service's reload failed (its data before keeps serving)
   */
  reload(): Promise<void>;
  /**
   * Stops taking requests, lets those in flight finish (`requestDrainMs`),
   * drains every service together (deliveries in flight, queued sync jobs),
   * then closes them, the last started first (the memory queue is saved,
   * stores closed), then the backends they share (connections, the state folder's lock).
   * @throws {Error} when that takes longer than `closeTimeoutMs`
   */
  close(): Promise<void>;
  /**
   * Keeps the process alive through a promise rejection nothing handled:
   * an error line, and `/health/ready` answering 503 naming it for a minute
   * (see {@linkcode ProcessGuard}), instead of Node's exit. The server installs it.
   * @param target the process, e.g. `process`
   * @returns a function that uninstalls it
   */
  guard(target: GuardedProcess): () => void;
}

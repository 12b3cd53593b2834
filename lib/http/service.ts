import type { Router } from "./router.ts";

/** Where a service writes what an operator should read: notes, and failures it survives. */
export interface ServiceLog {
  /** A note, e.g. a dataset loaded or a queue restored. */
  info(message: string): void;
  /** A failure the service recovers from or reports, with its error when there is one. */
  error(message: string, error?: unknown): void;
}

/**
 * A backend a service needs (a database, a queue's server, a shared rate
 * limiter), and how to ask whether it answers: `/health/ready` asks each.
 */
export interface ReadinessProbe {
  /** What it is, as `/health/ready` names it, e.g. `queue: Redis at redis://127.0.0.1:6379`. */
  readonly part: string;
  /**
   * Asks it once: resolves when it answers, rejects with why when it does
   * not. The host gives it a short time (a probe not settled by then counts
   * as failing), asks it at most once at a time and keeps its answer for a
   * moment, so a probe need do none of that itself.
   */
  check(): Promise<void>;
}

/** A named entry point of a service. */
export interface ServiceEndpoint {
  /** What it is, e.g. `Token endpoint`. */
  readonly label: string;
  /** Its URL, e.g. `http://127.0.0.1:8000/oauth2/token`. */
  readonly url: string;
}

/**
 * A credential a service was given in plain text, e.g. an API key of a file
 * that holds it unhashed. A host shows where it is kept (`setting`, `file`)
 * and never the value in a log, unless it knows the value is public (the
 * demo data's) and the reader is a person at a terminal.
 */
export interface ServiceCredential {
  /** What it is, e.g. `API key "demo"`. */
  readonly label: string;
  readonly value: string;
  /** The setting that names the file it was read from, e.g. `API_KEYS_FILE`. */
  readonly setting: string;
  /** The file, as the setting names it, e.g. `data/api_keys.json`. */
  readonly file: string;
  /**
   * A first command that uses it, with `{value}` where the value goes, e.g.
   * `curl -H 'x-api-key: {value}' 'http://127.0.0.1:8000/v1/odata/v4/Locations?$top=2'`.
   */
  readonly example?: string;
}

/** What a running service serves, for the host to print or show. */
export interface ServiceDescription {
  readonly endpoints: readonly ServiceEndpoint[];
  readonly credentials: readonly ServiceCredential[];
  /** Other lines worth printing at start-up (what was loaded, what is refused); never a secret. */
  readonly notes: readonly string[];
}

/**
 * A service as a domain contributes it to an app: started (data loaded,
 * stores connected, workers running), mounted under its prefixes, drained
 * and closed at shutdown.
 */
export interface RunningService {
  /** The `service` label of its metrics, e.g. `water`, `sync` or `relay`. */
  readonly name: string;
  /** Path prefixes its routes live under, where the host mounts it. */
  readonly prefixes: readonly string[];
  /** Its handler, with its routes. */
  readonly handler: Router;
  /**
   * The HTTP statuses of its domain's error codes (its `ErrorStatusTable`):
   * a host joins every service's (`errorStatuses`) and answers with them the
   * errors a service's handler throws, those of other domains included (a
   * bearer token refused by the token service's guard, in the sync API).
   */
  readonly errorStatus?: Readonly<Record<string, number>>;
  /**
   * What it serves.
   * @param origin where the host serves it, e.g. `http://127.0.0.1:8000`
   */
  describe(origin: string): ServiceDescription;
  /**
   * Loads the service's data again without a restart (a host calls it on
   * `SIGHUP`), reporting what it loaded through its log; rejects when that
   * failed, what served before serving on. Absent when there is nothing to reload.
   */
  reload?(): Promise<void>;
  /**
   * The backends the service needs and how to ask each whether it answers,
   * for `/health/ready`; absent or empty when it needs nothing outside the
   * process (what it loads at start, it has once started).
   */
  readonly readiness?: readonly ReadinessProbe[];
  /**
   * Ends the long-lived answers it holds (change streams, long-polls), as
   * the host stops taking requests and before it waits for those in flight,
   * so that they do not hold the shutdown up. Absent when it holds none.
   */
  endStreams?(): void;
  /** Finishes the work in flight (deliveries, queued jobs) once the host takes no more requests. */
  drain(): Promise<void>;
  /** Saves what must outlive the process and closes stores and connections, once every service has drained. */
  close(): Promise<void>;
}

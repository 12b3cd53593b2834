import {
  loadDatasets,
  type LoadDatasetsOptions,
  type LoadedDatasets,
  reloadDatasets,
  type ReloadReport,
} from "./load_datasets.ts";
import type { WaterStore } from "../store/store.ts";

/** Options of {@linkcode LiveDatasets}. */
export interface LiveDatasetsOptions extends LoadDatasetsOptions {
  /**
   * Loads the folder again from what serves now.
   * @default reloadDatasets
   */
  reload?: (
    dir: string,
    previous: LoadedDatasets,
    options: LoadDatasetsOptions,
  ) => Promise<LoadedDatasets>;
}

/**
 * A datasets folder served live: the current store, replaced as a whole by
 * {@linkcode LiveDatasets.reload}. A reader takes {@linkcode LiveDatasets.store}
 * once per request and keeps it, so a request answers wholly from the store
 * it started with while later ones see the new one. One reload runs at a
 * time; reloads asked for while one runs are joined into one more, run after
 * it (the files may have changed after it read them), whose report they all get.
 * @example
 * ```ts
 * const live = await LiveDatasets.open("data/datasets");
 * const handler = createWaterService(live, { keys, now: () => performance.now() });
 * process.on("SIGHUP", () => void live.reload().then((report) => console.log(report.datasets.length)));
 * ```
 */
export class LiveDatasets {
  /** The datasets folder. */
  readonly dir: string;
  readonly #options: LoadDatasetsOptions;
  readonly #reload: (
    dir: string,
    previous: LoadedDatasets,
    options: LoadDatasetsOptions,
  ) => Promise<LoadedDatasets>;
  #loaded: LoadedDatasets;
  #running: Promise<ReloadReport> | undefined;
  #waiting: {
    readonly promise: Promise<ReloadReport>;
    resolve(report: ReloadReport): void;
    reject(error: unknown): void;
  } | undefined;

  /**
   * Loads a datasets folder and serves it live.
   * @param dir the datasets folder
   * @param options chunk size, issue limits and the reload function
   * @returns the live datasets
   * @throws {WaterError} `ERR_WATER_DATASET` when `dir` cannot be read
   */
  static async open(dir: string, options: LiveDatasetsOptions = {}): Promise<LiveDatasets> {
    return new LiveDatasets(dir, await loadDatasets(dir, options), options);
  }

  /**
   * Serves loaded datasets live.
   * @param dir the datasets folder they were loaded from
   * @param loaded what serves first
   * @param options chunk size, issue limits and the reload function
   */
  constructor(dir: string, loaded: LoadedDatasets, options: LiveDatasetsOptions = {}) {
    this.dir = dir;
    this.#loaded = loaded;
    const { reload, ...rest } = options;
    this.#options = rest;
    this.#reload = reload ?? reloadDatasets;
  }

  /** The store new requests are answered from. */
  get store(): WaterStore {
    return this.#loaded.store;
  }

  /** What serves now: the store, its last report, and its datasets' fingerprints and ids. */
  get loaded(): LoadedDatasets {
    return this.#loaded;
  }

  /** Whether a reload runs now. */
  get reloading(): boolean {
    return this.#running !== undefined;
  }

  /**
   * Loads the folder again and serves the new store from the moment it is
   * built; on failure the store before keeps serving. Asked while a reload
   * runs, it waits for one more reload after that one, shared with every
   * other request made meanwhile.
   * @returns the report of the reload that served this request
   * @throws {WaterError} `ERR_WATER_DATASET` when the folder cannot be read (see `reloadDatasets`)
   */
  reload(): Promise<ReloadReport> {
    if (this.#running === undefined) return this.#launch();
    if (this.#waiting === undefined) {
      let resolve!: (report: ReloadReport) => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<ReloadReport>((yes, no) => {
        resolve = yes;
        reject = no;
      });
      this.#waiting = { promise, resolve, reject };
    }
    return this.#waiting.promise;
  }

  #launch(): Promise<ReloadReport> {
    const run = this.#reload(this.dir, this.#loaded, this.#options).then((next) => {
      this.#loaded = next;
      return next.report;
    });
    this.#running = run;
    // The next reload starts as this one ends, in the same turn: none can start between them.
    const done = (): void => {
      this.#running = undefined;
      const waiting = this.#waiting;
      this.#waiting = undefined;
      if (waiting !== undefined) this.#launch().then(waiting.resolve, waiting.reject);
    };
    run.then(done, done);
    return run;
  }
}

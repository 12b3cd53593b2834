// A sync service on a hand-driven clock, counting UUIDs and a job queue the
// test runs by hand, so a test sees a ticket `new` before its job runs.
import { type Handler, HttpError } from "../../lib/http/mod.ts";
import {
  createSyncService,
  MemorySyncStore,
  RevisionStreams,
  type RevisionStreamsOptions,
  SerialJobs,
  type SyncServiceOptions,
  type SyncStore,
} from "../../lib/sync/mod.ts";
import { call, type CallResult } from "./water.ts";

export const T0 = Date.UTC(2026, 0, 5, 10, 0, 0);
export const ALICE = "a11ce000-0000-4000-8000-000000000001";
export const BOB = "b0b00000-0000-4000-8000-000000000002";
export const BASE = "/api/v2/sync/user";

export interface SyncFixture {
  readonly handler: Handler;
  readonly store: MemorySyncStore;
  readonly clock: { time: number };
  readonly jobs: SerialJobs;
  /** The change streams and long-polls open. */
  readonly streams: RevisionStreams;
  /** Errors the job queue reported. */
  readonly jobErrors: unknown[];
  /** Runs every queued job to the end. */
  runJobs(): Promise<void>;
  /** Jobs waiting for {@linkcode SyncFixture.runJobs}. */
  waiting(): number;
  /** A request as `user` (the `x-test-user` header stands in for a bearer token). */
  request(
    user: string,
    target: string,
    init?: { method?: string; body?: string; headers?: Record<string, string> },
  ): Promise<CallResult>;
}

/** A message object of the schema. */
export function message(n: number, subject = `Subject ${n}`): Record<string, unknown> {
  return { uuid: key(n), subject, body: `Body ${n}`, read: false, sent_at: "2026-01-01T00:00:00Z" };
}

/** A team object of the schema. */
export function team(n: number, name = `Team ${n}`): Record<string, unknown> {
  return { uuid: key(1000 + n), name, color: null, archived: false };
}

export function key(n: number): string {
  return `10000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
}

export async function syncFixture(
  options: Partial<Omit<SyncServiceOptions, "jobs">> & {
    store?: (store: MemorySyncStore) => SyncStore;
    /** The streams' bounds and timers (their heads are the store's). */
    streamOptions?: Omit<RevisionStreamsOptions, "headOf">;
  } = {},
): Promise<SyncFixture> {
  const clock = { time: T0 };
  let n = 0;
  const store = new MemorySyncStore({
    now: () => clock.time,
    uuid: () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`,
  });
  await store.createContext({ uuid: ALICE, username: "alice", notifyLanguage: null });
  await store.createContext({ uuid: BOB, username: "bob", notifyLanguage: "fr" });
  const runs: (() => void)[] = [];
  const jobErrors: unknown[] = [];
  const jobs = new SerialJobs({
    defer: (run) => runs.push(run),
    onError: (error) => jobErrors.push(error),
  });
  const { store: wrap, streamOptions, ...rest } = options;
  const streams = new RevisionStreams(store.feed, {
    ...streamOptions,
    headOf: (owner) => store.head(owner),
  });
  const handler = createSyncService(wrap === undefined ? store : wrap(store), {
    streams,
    ...rest,
    jobs,
    authorize: rest.authorize ?? ((request) => {
      const user = request.headers["x-test-user"];
      if (user === undefined) {
        return Promise.reject(new HttpError("ERR_HTTP_UNAUTHORIZED", "no test user"));
      }
      return Promise.resolve(user);
    }),
  });
  return {
    handler,
    store,
    clock,
    jobs,
    streams,
    jobErrors,
    async runJobs() {
      while (runs.length > 0) runs.shift()!();
      await jobs.idle();
    },
    waiting: () => runs.length,
    request(user, target, init = {}) {
      const headers: Record<string, string> = { "x-test-user": user, ...init.headers };
      if (init.body !== undefined && headers["content-type"] === undefined) {
        headers["content-type"] = "application/json";
      }
      return call(handler, target, {
        method: init.method ?? "GET",
        headers,
        ...(init.body === undefined ? {} : { body: init.body }),
      });
    },
  };
}

import { type BackoffOptions, nextDelay } from "./backoff.ts";
import { defaultRandom, defaultSleep, drawFrom } from "./_platform.ts";
import { SseParser } from "./_sse.ts";
import type { ChangesTransport } from "./types.ts";

/** Options of {@linkcode streamChanges}. */
export interface StreamChangesOptions {
  /**
   * The path of the user context (the stream is `<contextPath>/changes`).
   * @default {"/api/v2/sync/user"}
   */
  readonly contextPath?: string;
  /**
   * How long to wait before connecting again after the stream ends, in
   * milliseconds, until the server says otherwise (`retry:`).
   * @default {3000}
   */
  readonly reconnectDelay?: number;
  /**
   * The backoff added to the reconnection time while connections fail in a
   * row (full jitter).
   * @default {{ initialDelay: 1000, maxDelay: 60000, factor: 2 }}
   */
  readonly backoff?: BackoffOptions;
  /**
   * The long-poll's wait (`since/<revision>?wait=`), in seconds, when the
   * server has no stream or the platform's `fetch` cannot read one.
   * @default {30}
   */
  readonly wait?: number;
  /**
   * Waits; resolves early when the signal aborts.
   * @default a timer
   */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /**
   * Random bytes (the jitter).
   * @default the platform's `crypto.getRandomValues`
   */
  readonly random?: (size: number) => Uint8Array;
  /**
   * The clock, in epoch milliseconds: a long-poll answered sooner than half
   * its wait without a change (a server that does not wait) is followed by
   * the rest of the wait, not by another request at once.
   * @default {Date.now}
   */
  readonly now?: () => number;
}

/** Where a transport is: what it needs for its requests and waits. */
interface Run {
  readonly signal: AbortSignal;
  readonly request: (path: string, init?: RequestInit) => Promise<Response>;
  /** Connections (or long-polls) that failed in a row. */
  failures: number;
  /** The server's reconnection time (`retry:`). */
  retry: number;
}

/**
 * The changes transport that listens: it holds the server's change stream
 * (`GET <contextPath>/changes`, Server-Sent Events read through `fetch`, so
 * the bearer token stays in a header) and yields each revision it
 * announces; when the stream ends it connects again after the server's
 * `retry:` time (plus a backoff while connections fail in a row), resuming
 * from the last event's id (`Last-Event-ID`), so that nothing committed
 * meanwhile is missed. When the server has no stream (404, 405) or the
 * answer is not one (another content type, or a `fetch` without a readable
 * body, as in React Native), it long-polls instead:
 * `HEAD <contextPath>/since/<revision>?wait=<seconds>`. The default of
 * `createSyncClient` where the platform's `fetch` reads a body as a stream.
 * @param options the context's path, the reconnection time, the backoff, the long-poll's wait
 * @returns the transport, for `createSyncClient`'s `watch`
 * @throws {RangeError} when `wait` is not a whole number from 1 to 300 or `reconnectDelay` is negative
 * @example
 * ```ts
 * const client = createSyncClient({ baseUrl, clientId: "my-app", watch: streamChanges() });
 * client.start(); // another device's patch is in the local copy as soon as it commits
 * ```
 */
export function streamChanges(options: StreamChangesOptions = {}): ChangesTransport {
  const contextPath = (options.contextPath ?? "/api/v2/sync/user").replace(/\/+$/, "");
  const wait = options.wait ?? 30;
  if (!Number.isInteger(wait) || wait < 1 || wait > 300) {
    throw new RangeError(`Cannot long-poll: wait must be whole seconds from 1 to 300, got ${wait}`);
  }
  const reconnectDelay = options.reconnectDelay ?? 3000;
  if (!(reconnectDelay >= 0)) {
    throw new RangeError(
      `Cannot stream: reconnectDelay must be a number from 0, got ${reconnectDelay}`,
    );
  }
  const sleep = options.sleep ?? defaultSleep;
  const random = options.random ?? defaultRandom;
  const now = options.now ?? Date.now;

  /** Waits before the next connection: the server's time, plus a backoff after failures. */
  async function pause(run: Run): Promise<void> {
    const backoff = { initialDelay: 1000, maxDelay: 60_000, ...options.backoff };
    const extra = run.failures === 0
      ? 0
      : nextDelay(Math.min(run.failures - 1, 30), drawFrom(random), backoff);
    await sleep(run.retry + extra, run.signal);
  }

  /** The head, from the context's ETag (a HEAD); undefined when the server does not say. */
  async function headOf(run: Run): Promise<string | undefined> {
    const response = await run.request(contextPath, { method: "HEAD" });
    await response.body?.cancel().catch(() => {});
    return response.status === 200 ? etagHead(response.headers.get("etag")) : undefined;
  }

  async function* longPoll(from: string | undefined, run: Run): AsyncGenerator<string | undefined> {
    let at = from;
    while (!run.signal.aborted) {
      let response: Response;
      const asked = now();
      try {
        at ??= await headOf(run);
        if (at === undefined) {
          // A head the server will not name (a context big enough to be queued): poll.
          run.failures++;
          yield undefined;
          await pause(run);
          continue;
        }
        response = await run.request(`${contextPath}/since/${at}?wait=${wait}`, {
          method: "HEAD",
        });
        await response.body?.cancel().catch(() => {});
      } catch {
        if (run.signal.aborted) return;
        run.failures++;
        await pause(run);
        continue;
      }
      const head = etagHead(response.headers.get("etag"));
      if (response.status === 200 && head !== undefined) {
        run.failures = 0;
        at = head;
        yield head;
      } else if (response.status === 204) {
        run.failures = 0;
        if (head !== undefined && head !== at) {
          at = head;
          yield head;
        } else if (now() - asked < (wait * 1000) / 2) {
          await sleep(wait * 1000 - (now() - asked), run.signal);
        }
      } else if (response.status === 404 || response.status === 410 || response.status === 202) {
        // Pruned, unknown, or queued: something changed; the head is asked for again.
        at = undefined;
        run.failures++;
        yield undefined;
        await pause(run);
      } else {
        run.failures++;
        await pause(run);
      }
    }
  }

  return async function* stream(since, signal, request) {
    const run: Run = { signal, request, failures: 0, retry: reconnectDelay };
    let lastId = since ?? "";
    while (!signal.aborted) {
      let response: Response;
      try {
        const headers: Record<string, string> = { accept: "text/event-stream" };
        if (lastId !== "") headers["last-event-id"] = lastId;
        response = await request(`${contextPath}/changes`, { method: "GET", headers });
      } catch {
        if (signal.aborted) return;
        run.failures++;
        await pause(run);
        continue;
      }
      const body = response.body;
      const isStream = response.status === 200 &&
        /^text\/event-stream\b/i.test(response.headers.get("content-type") ?? "") &&
        typeof body?.getReader === "function";
      if (
        response.status === 404 || response.status === 405 || (response.status === 200 && !isStream)
      ) {
        await body?.cancel().catch(() => {});
        run.failures = 0;
        yield* longPoll(lastId === "" ? undefined : lastId, run);
        return;
      }
      if (!isStream || body === null) {
        await body?.cancel().catch(() => {});
        // A resume point the server cannot read: start from its head instead.
        if (response.status === 400) lastId = "";
        run.failures++;
        await pause(run);
        continue;
      }
      const parser = new SseParser(lastId);
      const reader = body.getReader();
      const decoder = new TextDecoder();
      let heard = false;
      try {
        for (;;) {
          const { done, value } = await reader.read();
          const items = done ? parser.end() : parser.push(decoder.decode(value, { stream: true }));
          for (const item of items) {
            if (item.kind === "retry") {
              run.retry = item.ms;
              continue;
            }
            heard = true;
            if (item.kind === "event") {
              lastId = parser.lastEventId;
              yield revisionOf(item.data, item.id);
            }
          }
          if (done) break;
        }
      } catch {
        // The connection broke: connect again.
      } finally {
        await reader.cancel().catch(() => {});
      }
      if (signal.aborted) return;
      // A stream that told nothing before it ended counts as a failure.
      run.failures = heard ? 0 : run.failures + 1;
      await pause(run);
    }
  };
}

/** The revision an event announces: its data's `revision`, else its id; undefined for neither. */
function revisionOf(data: string, id: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(data);
    if (typeof parsed === "object" && parsed !== null && "revision" in parsed) {
      const revision = parsed.revision;
      if (typeof revision === "string" && revision !== "") return revision;
    }
  } catch {
    // Not JSON: the id names it, if anything does.
  }
  return id === "" ? undefined : id;
}

/** The head an ETag names: `"<head>"`, or `"<from>.<head>"` for a diff. */
function etagHead(etag: string | null): string | undefined {
  const match = /^(?:W\/)?"([^"]*)"$/.exec(etag?.trim() ?? "");
  const head = match?.[1]?.split(".").at(-1);
  return head === undefined || head === "" ? undefined : head;
}

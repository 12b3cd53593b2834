// The changes transport of the playground's devices: the server's change
// stream (`GET /api/v2/sync/user/changes`, Server-Sent Events) read through
// the client's authorized fetch, so that the bearer token goes in a header
// (an EventSource cannot send one). Each `revision` event is handed to the
// client as the head the server reached, and told to the page; a stream that
// ends or is cut (the device going offline) is opened again after the
// server's `retry:`, from the last event's id, so that nothing is missed.

import type { ChangesTransport } from "../../sync_client/mod.ts";

/** A revision the stream announced. */
export interface PushedRevision {
  readonly revision: string;
  /** Its serial, when the event gave one. */
  readonly serial: number | undefined;
}

/** Options of {@linkcode streamChanges}. */
export interface StreamChangesOptions {
  /**
   * The stream's path, under the client's base URL.
   * @default {"/api/v2/sync/user/changes"}
   */
  readonly path?: string;
  /** Told of each revision the stream announces. */
  readonly onRevision?: (pushed: PushedRevision) => void;
  /** Told when the stream is open, and when it is not (ended, cut, refused). */
  readonly onOpen?: (open: boolean) => void;
  /**
   * How long to wait before opening the stream again, until the server's `retry:` says.
   * @default {1000}
   */
  readonly retryMs?: number;
}

/** One event of a stream: its fields. */
interface StreamEvent {
  readonly id: string | undefined;
  readonly event: string;
  readonly data: string;
  readonly retry: number | undefined;
}

/**
 * A changes transport for `createSyncClient`'s `watch` that holds the
 * server's change stream open.
 * @param options the path; who is told of revisions and of the stream's state
 * @returns the transport
 */
export function streamChanges(options: StreamChangesOptions = {}): ChangesTransport {
  const path = options.path ?? "/api/v2/sync/user/changes";
  return async function* stream(since, signal, request) {
    let last = since;
    let retryMs = options.retryMs ?? 1000;
    while (!signal.aborted) {
      try {
        const query = last === undefined ? "" : `?since=${encodeURIComponent(last)}`;
        const response = await request(`${path}${query}`, {
          headers: { accept: "text/event-stream" },
          cache: "no-store",
        });
        if (response.status === 200 && response.body !== null) {
          options.onOpen?.(true);
          for await (const event of readEvents(response.body)) {
            if (event.retry !== undefined) retryMs = event.retry;
            if (event.event !== "revision") continue;
            const pushed = parseRevision(event);
            if (pushed === undefined) continue;
            last = pushed.revision;
            options.onRevision?.(pushed);
            yield pushed.revision;
          }
        } else {
          await response.body?.cancel().catch(() => {});
        }
      } catch {
        // Cut (the device went offline) or refused: opened again below.
      }
      options.onOpen?.(false);
      await wait(retryMs, signal);
    }
  };
}

/** The revision an event announces: `data` is `{"revision", "serial"}`, the id the revision. */
function parseRevision(event: StreamEvent): PushedRevision | undefined {
  try {
    const data: unknown = JSON.parse(event.data);
    if (typeof data === "object" && data !== null && "revision" in data) {
      const revision = data.revision;
      const serial = "serial" in data && typeof data.serial === "number" ? data.serial : undefined;
      if (typeof revision === "string") return { revision, serial };
    }
  } catch {
    // Not JSON: the id alone.
  }
  return event.id === undefined || event.id === "" ? undefined : {
    revision: event.id,
    serial: undefined,
  };
}

/** The events of a `text/event-stream` body, as they arrive (comments and unnamed fields skipped). */
async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<StreamEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let fields = new Map<string, string>();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true });
      const lines = buffer.split(/\r\n|\r|\n/);
      // The last piece is a line not yet whole (or "" after a line break).
      buffer = lines.pop() ?? "";
      for (const line of lines) {
        if (line === "") {
          if (fields.size > 0) {
            const retry = Number(fields.get("retry"));
            yield {
              id: fields.get("id"),
              event: fields.get("event") ?? "message",
              data: fields.get("data") ?? "",
              retry: Number.isSafeInteger(retry) && retry >= 0 && fields.has("retry")
                ? retry
                : undefined,
            };
          }
          fields = new Map();
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const name = colon === -1 ? line : line.slice(0, colon);
        const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
        const before = fields.get(name);
        fields.set(name, name === "data" && before !== undefined ? `${before}\n${value}` : value);
      }
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Waits `ms`, or less when the signal aborts. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

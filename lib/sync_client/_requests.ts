// The sync API's requests: a patch sent under its key and its ticket
// followed to the end; a snapshot or a diff (through a ticket when queued).
import { nextDelay } from "./backoff.ts";
import { aborted, type Connection, readJson } from "./_connection.ts";
import type { PatchRecord, ServerData } from "./_state.ts";
import { dataOf, isRecord, type TicketBody, ticketOf, unexpected } from "./_wire.ts";
import type { SyncObjectError } from "./types.ts";

/** What the requests need of the client. */
export interface RequestOptions {
  readonly connection: Connection;
  readonly contextPath: string;
  readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  readonly draw: () => number;
  readonly ticketPollDelay: number;
}

/** How a sent patch ended. */
export type Outcome =
  | { readonly kind: "done" }
  | { readonly kind: "aborted"; readonly errors: readonly SyncObjectError[] }
  /** A 422: the body is not a patch; `errors` are `{message, field}`. */
  | { readonly kind: "invalid"; readonly errors: readonly { message: string; field?: string }[] }
  /** The ticket failed on the server, or was lost (expired): sent again under a new key. */
  | { readonly kind: "again"; readonly wait: boolean };

/** POSTs a patch under its key and follows its ticket to the end. */
export async function sendPatch(
  options: RequestOptions,
  patch: PatchRecord,
  signal: AbortSignal,
): Promise<Outcome> {
  const { connection, contextPath } = options;
  const response = await connection.authorized(contextPath, {
    method: "POST",
    headers: { "content-type": "application/json", "idempotency-key": patch.key },
    body: patch.body,
  }, signal);
  const body = await readJson(response);
  if (response.status === 422) {
    const errors = Array.isArray(body)
      ? body.filter((e): e is { message: string; field?: string } =>
        isRecord(e) && typeof e["message"] === "string"
      )
      : [{ message: "The server refused the patch" }];
    return { kind: "invalid", errors };
  }
  if (response.status !== 202 || !isRecord(body) || !isRecord(body["ticket"])) {
    throw unexpected("send the outbox", response);
  }
  return follow(options, ticketOf(body["ticket"]), signal);
}

async function follow(
  options: RequestOptions,
  first: TicketBody,
  signal: AbortSignal,
): Promise<Outcome> {
  let ticket = first;
  for (let attempt = 0; ticket.status === "new" || ticket.status === "work"; attempt++) {
    const delay = nextDelay(attempt, options.draw(), {
      initialDelay: options.ticketPollDelay,
      maxDelay: 3000,
    });
    await options.sleep(delay, signal);
    if (signal.aborted) throw aborted();
    const response = await options.connection.authorized(
      `${options.contextPath}/ticket/${ticket.uuid}`,
      { method: "GET" },
      signal,
    );
    const body = await readJson(response);
    if (response.status === 404 || response.status === 410) return { kind: "again", wait: false };
    if (response.status !== 200 || !isRecord(body) || !isRecord(body["ticket"])) {
      throw unexpected("follow a ticket", response);
    }
    ticket = ticketOf(body["ticket"]);
  }
  switch (ticket.status) {
    case "done":
      return { kind: "done" };
    case "aborted":
      return { kind: "aborted", errors: ticket.errors ?? [] };
    default:
      return { kind: "again", wait: true };
  }
}

/** GETs a snapshot or a diff (through a ticket when queued). */
export async function getData(
  options: RequestOptions,
  path: string,
  signal: AbortSignal,
  etag?: string,
): Promise<ServerData | undefined> {
  const { connection } = options;
  const response = await connection.authorized(
    path,
    etag === undefined ? { method: "GET" } : { method: "GET", headers: { "if-none-match": etag } },
    signal,
  );
  if (response.status === 204 || response.status === 304) {
    await response.body?.cancel().catch(() => {});
    return undefined;
  }
  if (response.status === 404 || response.status === 410) {
    await response.body?.cancel().catch(() => {});
    if (path === options.contextPath) throw unexpected("take a snapshot", response);
    return getData(options, options.contextPath, signal);
  }
  const body = await readJson(response);
  if (response.status === 200 && isRecord(body) && isRecord(body["data"])) {
    return dataOf(body["data"], response);
  }
  if (response.status === 202 && isRecord(body) && isRecord(body["ticket"])) {
    let ticket = ticketOf(body["ticket"]);
    for (let attempt = 0;; attempt++) {
      await options.sleep(
        nextDelay(attempt, options.draw(), {
          initialDelay: options.ticketPollDelay,
          maxDelay: 3000,
        }),
        signal,
      );
      if (signal.aborted) throw aborted();
      const answer = await connection.authorized(
        `${options.contextPath}/ticket/${ticket.uuid}`,
        { method: "GET" },
        signal,
      );
      const result = await readJson(answer);
      // A ticket lost or failed: ask again.
      if (answer.status === 404 || answer.status === 410) {
        return getData(options, path, signal, etag);
      }
      if (answer.status !== 200 || !isRecord(result) || !isRecord(result["ticket"])) {
        throw unexpected("follow a ticket", answer);
      }
      ticket = ticketOf(result["ticket"]);
      if (ticket.status === "done" && isRecord(result["data"])) {
        return dataOf(result["data"], answer);
      }
      if (ticket.status !== "new" && ticket.status !== "work") {
        return getData(options, path, signal, etag);
      }
    }
  }
  throw unexpected("pull", response);
}

import { HttpError } from "../http/mod.ts";
import { type QueryParameter } from "../http/_internal.ts";
import { type AddressPolicy, targetRefusal } from "./address_policy.ts";
import { RelayError } from "./errors.ts";
import { decodeBase64Url, encodeBase64Url } from "../crypto/_internal.ts";
import {
  ATTEMPT_STATS_RETENTION_MS,
  type AttemptCounts,
  type DeadLetterQuery,
  type DeliveryStatus,
  type JobView,
  type MessageCursor,
  type MessagePage,
  type MessageQuery,
} from "./queue.ts";
import type { Endpoint } from "./tenants.ts";

// The management API's decisions and answers, pure: who is asking, what a
// body may hold, and how endpoints, secrets, messages and dead letters are
// shown. The routes (create_relay_service.ts) read the request, call these
// and the tenant directory or the queue, and answer.

/**
 * The API key a request carries: `Authorization: Bearer <key>` or `x-api-key`
 * (both may be sent when they agree).
 * @param headers the request's headers, lower-case names
 * @returns the key
 * @throws {HttpError} `ERR_HTTP_UNAUTHORIZED` (401, with a Bearer challenge) when there is none or they disagree
 */
export function apiKeyOf(headers: Readonly<Record<string, string | undefined>>): string {
  const authorization = headers["authorization"];
  let key = headers["x-api-key"];
  if (authorization !== undefined) {
    const match = /^Bearer +(\S+) *$/i.exec(authorization);
    if (match === null) throw unauthorized('the Authorization header must be "Bearer <API key>"');
    if (key !== undefined && key !== match[1]) {
      throw unauthorized("the Authorization and x-api-key headers hold different keys");
    }
    key = match[1];
  }
  if (key === undefined || key.trim() === "") {
    throw unauthorized(
      'send the tenant\'s API key as "Authorization: Bearer <key>" or in x-api-key',
    );
  }
  return key.trim();
}

/**
 * The 401 of a request without a usable API key.
 * @param why what is wrong, for the message
 */
export function unauthorized(why: string): HttpError {
  return new HttpError("ERR_HTTP_UNAUTHORIZED", `Cannot authenticate the request: ${why}`, {
    headers: { "www-authenticate": 'Bearer realm="webhook relay"' },
  });
}

/**
 * Refuses an endpoint body whose URL names an IP address that deliveries
 * would always refuse; passes any other body on (the directory checks the
 * rest, and deliveries stay the authority for host names).
 * @param body the endpoint body, as JSON gave it
 * @param policy the delivery's address policy; undefined for none
 * @returns the body
 * @throws {RelayError} `ERR_RELAY_INVALID_ENDPOINT` naming `url`
 */
export function checkEndpointAddress(body: unknown, policy: AddressPolicy | undefined): unknown {
  const url = typeof body === "object" && body !== null
    ? (body as { url?: unknown }).url
    : undefined;
  if (policy === undefined || typeof url !== "string") return body;
  const parsed = URL.parse(url);
  if (parsed === null) return body;
  const refused = targetRefusal(policy, parsed);
  if (refused !== undefined) {
    throw new RelayError(
      "ERR_RELAY_INVALID_ENDPOINT",
      `Cannot use endpoint field "url": every delivery to ${parsed.host} would be refused: ${refused}`,
      { target: "url" },
    );
  }
  return body;
}

/**
 * The secret a rotation asks for: none (a new one is made) or `{"secret"}`.
 * @param body the optional JSON body
 * @returns the secret as given (the directory checks its form), or undefined
 * @throws {RelayError} `ERR_RELAY_INVALID_ENDPOINT` for any other body
 */
export function rotateSecretInput(body: unknown): unknown {
  if (body === undefined) return undefined;
  if (
    typeof body !== "object" || body === null || Array.isArray(body) ||
    Object.keys(body).some((key) => key !== "secret")
  ) {
    throw new RelayError(
      "ERR_RELAY_INVALID_ENDPOINT",
      'Cannot rotate the secret: the body may only hold {"secret": "whsec_..."}',
      { target: "secret" },
    );
  }
  return (body as { secret?: unknown }).secret;
}

/**
 * Which dead letters a replay queues again: all of the tenant's, or one endpoint's.
 * @param body the optional JSON body, `{"endpoint_id"}`
 * @throws {HttpError} `ERR_HTTP_BAD_REQUEST` naming `endpoint_id` for any other body
 */
export function replayTarget(body: unknown): { readonly endpointId?: string } {
  if (body === undefined) return {};
  const endpointId = (body as { endpoint_id?: unknown } | null)?.endpoint_id;
  if (
    typeof body !== "object" || body === null || Array.isArray(body) ||
    Object.keys(body).some((key) => key !== "endpoint_id") ||
    (endpointId !== undefined && typeof endpointId !== "string")
  ) {
    throw new HttpError(
      "ERR_HTTP_BAD_REQUEST",
      'Cannot replay: the body may only hold {"endpoint_id": "<id>"}',
      { target: "endpoint_id" },
    );
  }
  return endpointId === undefined ? {} : { endpointId: endpointId as string };
}

/**
 * The dead-letter listing a query asks for: `limit` (1 to 1000, 100 by default) and `endpoint`.
 * @param query the parsed query
 * @throws {HttpError} `ERR_HTTP_BAD_REQUEST` naming `limit`
 */
export function deadLetterQuery(query: readonly QueryParameter[]): DeadLetterQuery {
  const values = new Map(query.map((parameter) => [parameter.name, parameter.value] as const));
  const limit = values.has("limit") ? Number(values.get("limit")) : DEAD_LETTER_LIMIT.default;
  if (!Number.isInteger(limit) || limit < 1 || limit > DEAD_LETTER_LIMIT.max) {
    throw new HttpError(
      "ERR_HTTP_BAD_REQUEST",
      `Cannot list dead letters: limit must be an integer from 1 to ${DEAD_LETTER_LIMIT.max}`,
      { target: "limit" },
    );
  }
  const endpointId = values.get("endpoint");
  return { limit, ...(endpointId === undefined ? {} : { endpointId }) };
}

/** The delivery statuses the message log filters by. */
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ["pending", "delivered", "dead"];
const STATUSES = DELIVERY_STATUSES;
/** Dead letters a listing gives by default and at most. */
export const DEAD_LETTER_LIMIT = { default: 100, max: 1000 } as const;
/** Messages a page of the log holds by default and at most. */
export const MESSAGE_LIMIT = { default: 20, max: 100 } as const;
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * The message-log page a query asks for: `limit` (1 to 100, 20 by default),
 * `event`, `status` (`pending`, `delivered` or `dead`), `endpoint`, `since`
 * and `until` (ISO 8601 times) and `cursor` (a page's `next_cursor`).
 * @param query the parsed query
 * @throws {HttpError} `ERR_HTTP_BAD_REQUEST` naming the parameter at fault
 */
export function messageQuery(query: readonly QueryParameter[]): MessageQuery {
  const values = new Map(query.map((parameter) => [parameter.name, parameter.value] as const));
  const limit = values.has("limit") ? Number(values.get("limit")) : MESSAGE_LIMIT.default;
  if (!Number.isInteger(limit) || limit < 1 || limit > MESSAGE_LIMIT.max) {
    throw new HttpError(
      "ERR_HTTP_BAD_REQUEST",
      `Cannot list messages: limit must be an integer from 1 to ${MESSAGE_LIMIT.max}`,
      { target: "limit" },
    );
  }
  const status = values.get("status");
  if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) {
    throw new HttpError(
      "ERR_HTTP_BAD_REQUEST",
      `Cannot list messages: status must be one of ${STATUSES.join(", ")} but is "${status}"`,
      { target: "status" },
    );
  }
  const since = time(values.get("since"), "since", "list messages");
  const until = time(values.get("until"), "until", "list messages");
  const cursor = values.get("cursor");
  const event = values.get("event");
  const endpointId = values.get("endpoint");
  return {
    limit,
    ...(event === undefined || event === "" ? {} : { event }),
    ...(status === undefined ? {} : { status: status as DeliveryStatus }),
    ...(endpointId === undefined || endpointId === "" ? {} : { endpointId }),
    ...(since === undefined ? {} : { since }),
    ...(until === undefined ? {} : { until }),
    ...(cursor === undefined || cursor === "" ? {} : { after: parseCursor(cursor) }),
  };
}

/**
 * Where the attempt counts start: `since` (an ISO 8601 time within the last
 * 24 hours, which the counts cover), or 24 hours ago.
 * @param query the parsed query
 * @param now the time now
 * @throws {HttpError} `ERR_HTTP_BAD_REQUEST` naming `since`
 */
export function statsSince(query: readonly QueryParameter[], now: number): number {
  const since = time(
    query.find((parameter) => parameter.name === "since")?.value,
    "since",
    "count attempts",
  );
  if (since === undefined) return now - ATTEMPT_STATS_RETENTION_MS;
  if (since < now - ATTEMPT_STATS_RETENTION_MS || since > now) {
    throw new HttpError(
      "ERR_HTTP_BAD_REQUEST",
      "Cannot count attempts: since must be within the last 24 hours, which the counts cover",
      { target: "since" },
    );
  }
  return since;
}

/** An ISO 8601 time with its zone, as milliseconds; undefined when absent or empty. */
function time(text: string | undefined, name: string, action: string): number | undefined {
  if (text === undefined || text === "") return undefined;
  const ms = ISO_TIME.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new HttpError(
      "ERR_HTTP_BAD_REQUEST",
      `Cannot ${action}: ${name} must be an ISO 8601 time with a zone, e.g. 2026-11-01T12:00:00Z, but is "${text}"`,
      {
        target: name,
      },
    );
  }
  return ms;
}

/** A page's place as the API hands it out: opaque, base64url. */
export function encodeCursor(cursor: MessageCursor): string {
  return encodeBase64Url(new TextEncoder().encode(`${cursor.createdAt}.${cursor.messageId}`));
}

/**
 * Reads a cursor {@linkcode encodeCursor} made.
 * @throws {HttpError} `ERR_HTTP_BAD_REQUEST` naming `cursor`
 */
export function parseCursor(text: string): MessageCursor {
  let decoded = "";
  try {
    decoded = new TextDecoder("utf-8", { fatal: true }).decode(decodeBase64Url(text));
  } catch {
    // Refused below.
  }
  const match = /^(\d{1,16})\.(\S{1,200})$/.exec(decoded);
  if (match === null || !Number.isSafeInteger(Number(match[1]))) {
    throw new HttpError(
      "ERR_HTTP_BAD_REQUEST",
      "Cannot list messages: cursor is not one this API gave (use a page's next_cursor)",
      { target: "cursor" },
    );
  }
  return { createdAt: Number(match[1]), messageId: match[2]! };
}

/** A page of the message log as the API shows it. */
export function renderMessagePage(page: MessagePage): Record<string, unknown> {
  return {
    data: page.messages.map((jobs) => renderMessage(jobs[0]!.messageId, jobs)),
    next_cursor: page.next === undefined ? null : encodeCursor(page.next),
  };
}

/**
 * The attempt counts of a tenant's endpoints as the API shows them: every
 * endpoint there is, with none counted when it made no attempt.
 * @param endpoints the tenant's endpoints
 * @param counts the counts the queue has
 * @param since where they start
 */
export function renderStats(
  endpoints: readonly Endpoint[],
  counts: readonly AttemptCounts[],
  since: number,
): Record<string, unknown> {
  const byEndpoint = new Map(counts.map((count) => [count.endpointId, count] as const));
  return {
    since: iso(since),
    data: endpoints.map((endpoint) => {
      const { attempts = 0, successes = 0 } = byEndpoint.get(endpoint.id) ?? {};
      return {
        endpoint_id: endpoint.id,
        attempts,
        successes,
        failures: attempts - successes,
        success_rate: attempts === 0 ? null : successes / attempts,
      };
    }),
  };
}

/** An endpoint as the API shows it (secrets are not listed). */
export function renderEndpoint(endpoint: Endpoint): Record<string, unknown> {
  return {
    id: endpoint.id,
    url: endpoint.url,
    events: endpoint.events.patterns,
    enabled: endpoint.enabled,
    disabled_reason: endpoint.disabledReason,
    rate_limit_per_second: endpoint.rateLimitPerSecond ?? null,
    encryption_key_id: endpoint.publicKey?.kid ?? null,
    created_at: iso(endpoint.createdAt),
    updated_at: iso(endpoint.updatedAt),
  };
}

/** The secrets that sign at `now`, newest first, with when each stops. */
export function renderSecrets(endpoint: Endpoint, now: number): Record<string, unknown>[] {
  return endpoint.secrets
    .filter((secret) => secret.expiresAt === null || secret.expiresAt > now)
    .map((secret) => ({
      secret: secret.secret,
      expires_at: secret.expiresAt === null ? null : iso(secret.expiresAt),
    }));
}

/** A message with its deliveries, one per endpoint (at least one job). */
export function renderMessage(id: string, jobs: readonly JobView[]): Record<string, unknown> {
  return {
    id,
    event: jobs[0]!.event,
    created_at: iso(jobs[0]!.createdAt),
    deliveries: jobs.map(renderJob),
  };
}

/** A job with its state and attempts. */
export function renderJob(job: JobView): Record<string, unknown> {
  return {
    id: job.id,
    message_id: job.messageId,
    endpoint_id: job.endpointId,
    event: job.event,
    state: job.state,
    ...(job.reason === undefined ? {} : { reason: job.reason }),
    next_attempt_at: job.state === "delayed" || job.state === "ready" ? iso(job.dueAt) : null,
    attempts: job.attempts.map((attempt) => ({
      at: iso(attempt.at),
      outcome: attempt.outcome,
      status: attempt.status,
      latency_ms: attempt.latencyMs,
      error: attempt.error,
    })),
  };
}

/** ISO 8601, UTC, milliseconds. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

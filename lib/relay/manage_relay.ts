import { HttpError, type QueryParameter } from "../http/mod.ts";
import { type AddressPolicy, checkTarget } from "./address_policy.ts";
import { RelayError } from "./errors.ts";
import type { DeadLetterQuery, JobView } from "./queue.ts";
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
    if (match === null) throw unauthorized("the Authorization header must be \"Bearer <API key>\"");
    if (key !== undefined && key !== match[1]) throw unauthorized("the Authorization and x-api-key headers hold different keys");
    key = match[1];
  }
  if (key === undefined || key.trim() === "") throw unauthorized("send the tenant's API key as \"Authorization: Bearer <key>\" or in x-api-key");
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
  const url = typeof body === "object" && body !== null ? (body as { url?: unknown }).url : undefined;
  if (policy === undefined || typeof url !== "string") return body;
  const parsed = URL.parse(url);
  if (parsed === null) return body;
  try {
    checkTarget(policy, parsed);
  } catch (error) {
    if (!(error instanceof RelayError)) throw error;
    throw new RelayError("ERR_RELAY_INVALID_ENDPOINT", `Cannot use endpoint field "url": ${error.message}; deliveries there would always be refused`, { target: "url" });
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
  if (typeof body !== "object" || body === null || Array.isArray(body) || Object.keys(body).some((key) => key !== "secret")) {
    throw new RelayError("ERR_RELAY_INVALID_ENDPOINT", 'Cannot rotate the secret: the body may only hold {"secret": "whsec_..."}', { target: "secret" });
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
  if (typeof body !== "object" || body === null || Array.isArray(body) || Object.keys(body).some((key) => key !== "endpoint_id") ||
    (endpointId !== undefined && typeof endpointId !== "string")) {
    throw new HttpError("ERR_HTTP_BAD_REQUEST", 'Cannot replay: the body may only hold {"endpoint_id": "<id>"}', { target: "endpoint_id" });
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
  const limit = values.has("limit") ? Number(values.get("limit")) : 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
    throw new HttpError("ERR_HTTP_BAD_REQUEST", "Cannot list dead letters: limit must be an integer from 1 to 1000", { target: "limit" });
  }
  const endpointId = values.get("endpoint");
  return { limit, ...(endpointId === undefined ? {} : { endpointId }) };
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
    .map((secret) => ({ secret: secret.secret, expires_at: secret.expiresAt === null ? null : iso(secret.expiresAt) }));
}

/** A message with its deliveries, one per endpoint (at least one job). */
export function renderMessage(id: string, jobs: readonly JobView[]): Record<string, unknown> {
  return { id, event: jobs[0]!.event, created_at: iso(jobs[0]!.createdAt), deliveries: jobs.map(renderJob) };
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

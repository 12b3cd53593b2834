import { encryptJwe, type RsaPublicKey, sha256Hex } from "../crypto/mod.ts";
import {
  checkJsonDepth,
  createRouter,
  type Router,
  HttpError,
  type HttpRequest,
  type HttpResponse,
  jsonResponse,
  parseQuery,
  readJson,
} from "../http/mod.ts";
import { type AddressPolicy, checkTarget } from "./address_policy.ts";
import { RelayError } from "./errors.ts";
import { createMessageIds } from "./message_ids.ts";
import { EVENT_NAME, MAX_EVENT_LENGTH } from "./event_patterns.ts";
import type { Attempt, Job, JobQueue, JobView } from "./queue.ts";
import type { TenantDirectory } from "./endpoint_directory.ts";
import type { Endpoint, Tenant } from "./tenants.ts";

/** Options of {@linkcode createRelayService}. */
export interface RelayServiceOptions {
  /** The tenants and endpoints: a `TenantRegistry`, or an `EndpointDirectory` that stores changes in the relay's backend. */
  readonly registry: TenantDirectory;
  readonly queue: JobQueue;
  /** Wall clock, milliseconds since the epoch. */
  readonly now: () => number;
  /** Random bytes, for message ids and encryption keys. */
  readonly random: (size: number) => Uint8Array;
  /** Encrypts for every endpoint without its own key; undefined for none. */
  readonly encryptionKey?: RsaPublicKey | undefined;
  /**
   * Largest accepted webhook body, bytes.
   * @default {262144}
   */
  readonly maxPayloadBytes?: number;
  /**
   * How long an `Idempotency-Key` gives the first answer again, milliseconds.
   * @default {86400000}
   */
  readonly idempotencyTtlMs?: number;
  /** Told of every accepted message, e.g. to wake the worker and count it. */
  readonly onAccepted?: (tenantId: string, jobs: readonly Job[]) => void;
  /** Prefix the routes are mounted under, for links. @default {"/webhook"} */
  readonly base?: string;
  /**
   * Checks the address of an endpoint URL whose host is an IP address, as
   * deliveries will: an endpoint the check refuses is refused at creation
   * (400) rather than failing every delivery. Deliveries stay the authority.
   * @default no check
   */
  readonly addressPolicy?: AddressPolicy;
}

const WEBHOOK_FIELDS = new Set(["event", "data"]);
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
const JSON_TYPE = "application/json";
/** Deepest nesting of a webhook body: deeper JSON could not be serialized again. */
const MAX_DEPTH = 32;
const encoder = new TextEncoder();
/** The attempts of a new job, shared: attempts are added by copying, never in place. */
const NO_ATTEMPTS: readonly Attempt[] = Object.freeze([]);
const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * The relay's HTTP API, for tenants authenticated by their API key
 * (`Authorization: Bearer <key>` or `x-api-key`):
 * `POST /webhook` (intake), `GET|POST /webhook/endpoints`,
 * `GET|PATCH|DELETE /webhook/endpoints/:id`, `GET /webhook/endpoints/:id/secret`,
 * `POST /webhook/endpoints/:id/rotate-secret`, `GET /webhook/messages/:id`,
 * `GET /webhook/dead-letters`, `POST /webhook/dead-letters/replay` and
 * `POST /webhook/dead-letters/:job/replay`.
 * @param options registry, queue, clock, randomness and limits
 * @returns the handler
 * @example
 * ```ts
 * const handler = createRelayService({ registry, queue: new MemoryQueue(), now: Date.now, random: pooledRandom() });
 * ```
 */
export function createRelayService(options: RelayServiceOptions): Router {
  const base = options.base ?? "/webhook";
  const maxPayload = options.maxPayloadBytes ?? 262_144;
  const idempotencyTtl = options.idempotencyTtlMs ?? 86_400_000;
  const { registry, queue } = options;
  let lastIso = { ms: Number.NaN, text: "" };
  const nextMessageId = createMessageIds(options.random, options.now);

  /** The ISO 8601 form of a time, remembered for the next call in the same millisecond. */
  function isoOf(ms: number): string {
    if (lastIso.ms !== ms) lastIso = { ms, text: iso(ms) };
    return lastIso.text;
  }

  function tenantOf(request: HttpRequest): Tenant {
    const authorization = request.headers["authorization"];
    let key = request.headers["x-api-key"];
    if (authorization !== undefined) {
      const match = /^Bearer +(\S+) *$/i.exec(authorization);
      if (match === null) throw unauthorized("the Authorization header must be \"Bearer <API key>\"");
      if (key !== undefined && key !== match[1]) throw unauthorized("the Authorization and x-api-key headers hold different keys");
      key = match[1];
    }
    if (key === undefined || key.trim() === "") throw unauthorized("send the tenant's API key as \"Authorization: Bearer <key>\" or in x-api-key");
    const tenant = registry.authenticate(key.trim());
    if (tenant === undefined) throw unauthorized("the API key is not a key of any tenant");
    return tenant;
  }

  async function intake(request: HttpRequest): Promise<HttpResponse> {
    const tenant = tenantOf(request);
    const idempotencyKey = request.headers["idempotency-key"];
    if (idempotencyKey !== undefined && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
      throw invalidWebhook("The Idempotency-Key header must be 1 to 255 visible ASCII characters", "idempotency-key");
    }
    const bytes = await readBytes(request, maxPayload);
    const webhook = parseWebhook(bytes);
    const now = options.now();
    const messageId = nextMessageId();
    const endpoints = registry.route(tenant.id, webhook.event);
    // Event names and endpoint ids are checked to need no JSON escaping.
    const head = `{"type":"${webhook.event}","timestamp":"${isoOf(now)}"`;
    const payload = `${head},"data":${webhook.data}}`;
    const jobs = endpoints.map((endpoint) => makeJob(endpoint, messageId, webhook.event, head, payload, now));
    const response = `{"id":"${messageId}","event":"${webhook.event}","endpoints":[${endpoints.map((endpoint) => `"${endpoint.id}"`).join(",")}]}`;
    const bodyHash = idempotencyKey === undefined ? "" : sha256Hex(bytes);
    const result = await queue.enqueue(
      idempotencyKey === undefined
        ? { tenantId: tenant.id, messageId, jobs }
        : { tenantId: tenant.id, messageId, jobs, idempotency: { key: idempotencyKey, answer: { bodyHash, messageId, response }, expiresAt: now + idempotencyTtl } },
    );
    if (!result.accepted) {
      if (result.previous.bodyHash !== bodyHash) {
        throw new RelayError(
          "ERR_RELAY_IDEMPOTENCY_CONFLICT",
          "Cannot accept the webhook: its Idempotency-Key was used with another body",
          { target: "idempotency-key" },
        );
      }
      return { status: 202, headers: { "content-type": `${JSON_TYPE}; charset=utf-8`, "idempotent-replayed": "true" }, body: result.previous.response };
    }
    options.onAccepted?.(tenant.id, jobs);
    // The response is ASCII: its length in characters is its length in bytes.
    return {
      status: 202,
      headers: { "content-type": `${JSON_TYPE}; charset=utf-8`, location: `${base}/messages/${messageId}`, "content-length": String(response.length) },
      body: response,
    };
  }

  function makeJob(endpoint: Endpoint, messageId: string, event: string, head: string, payload: string, now: number): Job {
    const key = endpoint.publicKey ?? options.encryptionKey;
    return {
      id: `${messageId}.${endpoint.id}`,
      messageId,
      tenantId: endpoint.tenantId,
      endpointId: endpoint.id,
      event,
      // Encrypted here, at intake, so that plaintext never rests in the queue.
      body: key === undefined ? payload : sealedPayload(head, payload, key, options.random),
      contentType: JSON_TYPE,
      createdAt: now,
      dueAt: now,
      attempts: NO_ATTEMPTS,
    };
  }

  async function readEndpointBody(request: HttpRequest): Promise<unknown> {
    return readJson(request, { maxBytes: 65_536, maxDepth: 8 });
  }

  /** Refuses an endpoint body whose URL names an IP address deliveries would refuse; passes it on otherwise. */
  function checkedUrl(body: unknown): unknown {
    const policy = options.addressPolicy;
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

  const routes = createRouter([
    { method: "POST", path: base, handler: intake },
    {
      method: "GET",
      path: `${base}/endpoints`,
      handler: (request) => {
        const tenant = tenantOf(request);
        return jsonResponse(200, { data: registry.endpoints(tenant.id).map(renderEndpoint) });
      },
    },
    {
      method: "POST",
      path: `${base}/endpoints`,
      handler: async (request) => {
        const tenant = tenantOf(request);
        const endpoint = await registry.createEndpoint(tenant.id, checkedUrl(await readEndpointBody(request)));
        return jsonResponse(201, { ...renderEndpoint(endpoint), secret: endpoint.secrets[0]!.secret }, {
          location: `${base}/endpoints/${endpoint.id}`,
        });
      },
    },
    {
      method: "GET",
      path: `${base}/endpoints/:id`,
      handler: (request, params) => jsonResponse(200, renderEndpoint(existing(tenantOf(request), params["id"]!))),
    },
    {
      method: "PATCH",
      path: `${base}/endpoints/:id`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        existing(tenant, params["id"]!);
        return jsonResponse(200, renderEndpoint(await registry.updateEndpoint(tenant.id, params["id"]!, checkedUrl(await readEndpointBody(request)))));
      },
    },
    {
      method: "DELETE",
      path: `${base}/endpoints/:id`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        existing(tenant, params["id"]!);
        await registry.deleteEndpoint(tenant.id, params["id"]!);
        return { status: 204 };
      },
    },
    {
      method: "GET",
      path: `${base}/endpoints/:id/secret`,
      handler: (request, params) => {
        const endpoint = existing(tenantOf(request), params["id"]!);
        return jsonResponse(200, { secrets: renderSecrets(endpoint, options.now()) }, { "cache-control": "no-store" });
      },
    },
    {
      method: "POST",
      path: `${base}/endpoints/:id/rotate-secret`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        existing(tenant, params["id"]!);
        const body = await readOptionalJson(request);
        if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body) || Object.keys(body).some((key) => key !== "secret"))) {
          throw new RelayError("ERR_RELAY_INVALID_ENDPOINT", 'Cannot rotate the secret: the body may only hold {"secret": "whsec_..."}', { target: "secret" });
        }
        const endpoint = await registry.rotateSecret(tenant.id, params["id"]!, (body as { secret?: unknown } | undefined)?.secret);
        return jsonResponse(200, { secrets: renderSecrets(endpoint, options.now()) }, { "cache-control": "no-store" });
      },
    },
    {
      method: "GET",
      path: `${base}/messages/:id`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        const jobs = await queue.message(tenant.id, params["id"]!);
        if (jobs.length === 0) {
          throw new RelayError("ERR_RELAY_UNKNOWN_MESSAGE", `Cannot find message "${params["id"]}" of this tenant (or it is past its retention)`);
        }
        return jsonResponse(200, { id: params["id"], event: jobs[0]!.event, created_at: iso(jobs[0]!.createdAt), deliveries: jobs.map(renderJob) });
      },
    },
    {
      method: "GET",
      path: `${base}/dead-letters`,
      handler: async (request) => {
        const tenant = tenantOf(request);
        const query = new Map(parseQuery(request.query).map((parameter) => [parameter.name, parameter.value] as const));
        const limit = query.has("limit") ? Number(query.get("limit")) : 100;
        if (!Number.isInteger(limit) || limit < 1 || limit > 1000) {
          throw new HttpError("ERR_HTTP_BAD_REQUEST", "Cannot list dead letters: limit must be an integer from 1 to 1000", { target: "limit" });
        }
        const endpointId = query.get("endpoint");
        const jobs = await queue.deadLetters(tenant.id, { limit, ...(endpointId === undefined ? {} : { endpointId }) });
        return jsonResponse(200, { data: jobs.map(renderJob) });
      },
    },
    {
      method: "POST",
      path: `${base}/dead-letters/replay`,
      handler: async (request) => {
        const tenant = tenantOf(request);
        const body = await readOptionalJson(request);
        const endpointId = (body as { endpoint_id?: unknown } | undefined)?.endpoint_id;
        if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body) ||
          Object.keys(body).some((key) => key !== "endpoint_id") || (endpointId !== undefined && typeof endpointId !== "string"))) {
          throw new HttpError("ERR_HTTP_BAD_REQUEST", 'Cannot replay: the body may only hold {"endpoint_id": "<id>"}', { target: "endpoint_id" });
        }
        const replayed = await queue.replay(tenant.id, endpointId === undefined ? {} : { endpointId: endpointId as string }, options.now());
        return jsonResponse(202, { replayed });
      },
    },
    {
      method: "POST",
      path: `${base}/dead-letters/:job/replay`,
      handler: async (request, params) => {
        const tenant = tenantOf(request);
        const replayed = await queue.replay(tenant.id, { jobId: params["job"]! }, options.now());
        if (replayed === 0) throw new RelayError("ERR_RELAY_UNKNOWN_MESSAGE", `Cannot find dead letter "${params["job"]}" of this tenant`);
        return jsonResponse(202, { replayed });
      },
    },
  ]);

  function existing(tenant: Tenant, id: string): Endpoint {
    const endpoint = registry.endpoint(tenant.id, id);
    if (endpoint === undefined) throw new RelayError("ERR_RELAY_UNKNOWN_ENDPOINT", `Cannot find endpoint "${id}" of this tenant`);
    return endpoint;
  }

  return routes;
}

/**
 * `{"event": "<name>", "data": ` at the start of a body, JSON whitespace
 * allowed: the shape clients send, read without parsing the whole body.
 */
const COMMON_HEAD = /^[ \t\n\r]*\{[ \t\n\r]*"event"[ \t\n\r]*:[ \t\n\r]*"([^"\\]*)"[ \t\n\r]*,[ \t\n\r]*"data"[ \t\n\r]*:(?=[ \t\n\r]*\{)/;
const JSON_SPACE = /^[ \t\n\r]*$/;
const JSON_EDGES = /^[ \t\n\r]+|[ \t\n\r]+$/g;

/**
 * The webhook's event, and its data as the JSON text the client sent (so
 * numbers keep every digit). A body shaped `{"event": "...", "data": {...}}`
 * is checked by parsing the data alone; any other is parsed whole.
 */
function parseWebhook(bytes: Uint8Array): { event: string; data: string } {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw new HttpError("ERR_HTTP_INVALID_JSON", "Cannot read the webhook: the body is not valid UTF-8");
  }
  checkJsonDepth(text, MAX_DEPTH);
  const head = COMMON_HEAD.exec(text);
  if (head !== null) {
    const end = text.lastIndexOf("}");
    const event = head[1]!;
    if (JSON_SPACE.test(text.slice(end + 1)) && event.length <= MAX_EVENT_LENGTH && EVENT_NAME.test(event)) {
      // JSON's own white space only: trim() would also drop U+00A0 and U+FEFF, which JSON refuses.
      const data = text.slice(head[0].length, end).replace(JSON_EDGES, "");
      try {
        // Valid, the data is one JSON object (the head saw its "{"), so the whole body is valid too.
        JSON.parse(data);
        return { event, data };
      } catch {
        // Not one value, e.g. a repeated "data" member: the full parse below decides.
      }
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError("ERR_HTTP_INVALID_JSON", `Cannot read the webhook: the body is not JSON (${(error as Error).message})`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidWebhook('The body must be a JSON object {"event": string, "data": object}');
  }
  for (const key of Object.keys(value)) {
    if (!WEBHOOK_FIELDS.has(key)) throw invalidWebhook(`Field "${key}" is unknown; a webhook has "event" and "data"`, key);
  }
  const { event, data } = value as { event?: unknown; data?: unknown };
  if (event === undefined) throw invalidWebhook('Field "event" is required', "event");
  if (typeof event !== "string") throw invalidWebhook('Field "event" must be a string', "event");
  if (event.length > MAX_EVENT_LENGTH || !EVENT_NAME.test(event)) {
    throw invalidWebhook(`Field "event" must be dot-separated words of letters, digits, "_", "-" or ":", at most ${MAX_EVENT_LENGTH} characters`, "event");
  }
  if (data === undefined) throw invalidWebhook('Field "data" is required', "data");
  if (typeof data !== "object" || data === null || Array.isArray(data)) throw invalidWebhook('Field "data" must be a JSON object', "data");
  return { event, data: memberText(text, "data") };
}

/**
 * The JSON text of a member's value in a valid JSON object text; the last
 * one when the name repeats, as JSON.parse keeps.
 */
function memberText(text: string, name: string): string {
  let found = "";
  let i = text.indexOf("{") + 1;
  const space = (): void => {
    while (i < text.length && " \t\n\r".includes(text[i]!)) i++;
  };
  const skipString = (): void => {
    for (i++; text[i] !== '"'; i++) if (text[i] === "\\") i++;
    i++;
  };
  for (;;) {
    space();
    if (text[i] === "}") return found;
    const keyStart = i;
    skipString();
    const key = JSON.parse(text.slice(keyStart, i)) as string;
    space();
    i++; // ":"
    space();
    const valueStart = i;
    let depth = 0;
    while (i < text.length) {
      const c = text[i]!;
      if (c === '"') {
        skipString();
        if (depth === 0) break;
        continue;
      }
      if (c === "{" || c === "[") depth++;
      else if (c === "}" || c === "]") {
        if (depth === 0) break;
        depth--;
        if (depth === 0) {
          i++;
          break;
        }
      } else if (c === "," && depth === 0) break;
      i++;
    }
    if (key === name) found = text.slice(valueStart, i).trim();
    space();
    if (text[i] === ",") i++;
  }
}

async function readBytes(request: HttpRequest, maxBytes: number): Promise<Uint8Array> {
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== JSON_TYPE) {
    throw new HttpError("ERR_HTTP_UNSUPPORTED_MEDIA_TYPE", `Cannot read the webhook: expected Content-Type application/json but found "${type || "none"}"`);
  }
  return request.body.bytes(maxBytes);
}

/** A JSON body when there is one: an empty body (no content type needed) is undefined. */
async function readOptionalJson(request: HttpRequest): Promise<unknown> {
  if (request.headers["content-length"] === "0" || (request.headers["content-type"] === undefined && request.headers["transfer-encoding"] === undefined)) {
    return undefined;
  }
  return readJson(request, { maxBytes: 65_536, maxDepth: 4 });
}

function invalidWebhook(message: string, target?: string): RelayError {
  return new RelayError("ERR_RELAY_INVALID_WEBHOOK", `Cannot accept the webhook: ${message}`, target === undefined ? {} : { target });
}

function unauthorized(why: string): HttpError {
  return new HttpError("ERR_HTTP_UNAUTHORIZED", `Cannot authenticate the request: ${why}`, {
    headers: { "www-authenticate": 'Bearer realm="webhook relay"' },
  });
}

/**
 * The body of an encrypted delivery: a JSON object that every Standard
 * Webhooks library parses after checking the signature, with the event's
 * `type` and `timestamp` in the clear and, in `encrypted`, the plain body
 * (`{"type","timestamp","data"}`) as a compact JWE. Nothing of `data` is left
 * outside the JWE.
 * @param head the plain body's opening, `{"type":…,"timestamp":…`
 * @param payload the plain body
 * @param key the receiver's public key
 * @param random random bytes for the content key and IV
 * @returns `{"type":…,"timestamp":…,"encrypted":"<JWE>"}`
 */
function sealedPayload(head: string, payload: string, key: RsaPublicKey, random: (size: number) => Uint8Array): string {
  // A compact JWE is base64url and dots: it needs no JSON escaping.
  return `${head},"encrypted":"${encryptJwe(encoder.encode(payload), key, random)}"}`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

function renderEndpoint(endpoint: Endpoint): Record<string, unknown> {
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

function renderSecrets(endpoint: Endpoint, now: number): Record<string, unknown>[] {
  return endpoint.secrets
    .filter((secret) => secret.expiresAt === null || secret.expiresAt > now)
    .map((secret) => ({ secret: secret.secret, expires_at: secret.expiresAt === null ? null : iso(secret.expiresAt) }));
}

function renderJob(job: JobView): Record<string, unknown> {
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

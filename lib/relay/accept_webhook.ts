import { encryptJwe, type RsaPublicKey, sha256Hex } from "../crypto/mod.ts";
import { checkJsonDepth } from "../http/_internal.ts";
import { HttpError, type HttpResponse } from "../http/mod.ts";
import { RelayError } from "./errors.ts";
import { EVENT_NAME, MAX_EVENT_LENGTH } from "./event_patterns.ts";
import type { Attempt, EnqueueBatch, EnqueueResult, Job } from "./queue.ts";
import type { Endpoint } from "./tenants.ts";

// Intake's decisions, pure: what a webhook body means, which jobs it makes,
// what is queued and what is answered. The routes (create_relay_service.ts)
// read the request, authenticate, call these and hand the batch to the queue.

const WEBHOOK_FIELDS = new Set(["event", "data"]);
const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;
const JSON_TYPE = "application/json";
/** Deepest nesting of a webhook body: deeper JSON could not be serialized again. */
const MAX_DEPTH = 32;
const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });
/** Event names kept at most by {@linkcode ownEventName}; past it, the memory starts again. */
const MAX_EVENT_NAMES = 1024;
/** Each event name seen, as a string of its own (the key is the value). */
const eventNames = new Map<string, string>();
/** The attempts of a new job, shared: attempts are added by copying, never in place. */
const NO_ATTEMPTS: readonly Attempt[] = Object.freeze([]);

/** A webhook as intake received it, from an authenticated tenant. */
export interface WebhookSubmission {
  readonly tenantId: string;
  /** The raw body, read within the size limit. */
  readonly body: Uint8Array;
  /** The `Idempotency-Key` header, checked by {@linkcode checkIdempotencyKey}. */
  readonly idempotencyKey: string | undefined;
}

/** What {@linkcode acceptWebhook} decides with, passed in: the time, the ids, the routes and the keys. */
export interface IntakeContext {
  /** Milliseconds since the epoch. */
  readonly now: number;
  /** `now` in ISO 8601 (the caller may reuse it within a millisecond). */
  readonly timestamp: string;
  /** The new message's id. */
  readonly messageId: string;
  /** The tenant's enabled endpoints subscribed to an event. */
  readonly route: (event: string) => readonly Endpoint[];
  /** Encrypts for every endpoint without its own key; undefined for none. */
  readonly encryptionKey: RsaPublicKey | undefined;
  /** Random bytes, for the JWE's content key and IV. */
  readonly random: (size: number) => Uint8Array;
  /** How long an idempotency key gives the first answer again, milliseconds. */
  readonly idempotencyTtlMs: number;
}

/** What intake queues and answers for a webhook. */
export interface AcceptedWebhook {
  /** The jobs, one per endpoint, with the idempotency key's answer when there is a key. */
  readonly batch: EnqueueBatch;
  /** The 202 body: `{"id","event","endpoints"}`. */
  readonly response: string;
  /** SHA-256 (hex) of the body when there is an idempotency key, else "". */
  readonly bodyHash: string;
}

/**
 * Checks an `Idempotency-Key` header.
 * @param value the header, or undefined
 * @returns the key, or undefined for none
 * @throws {RelayError} `ERR_RELAY_INVALID_WEBHOOK` (400) unless it is 1 to 255 visible ASCII characters
 */
export function checkIdempotencyKey(value: string | undefined): string | undefined {
  if (value !== undefined && !IDEMPOTENCY_KEY.test(value)) {
    throw invalidWebhook(
      "The Idempotency-Key header must be 1 to 255 visible ASCII characters",
      "idempotency-key",
    );
  }
  return value;
}

/**
 * Decides what a webhook makes: parses and checks the body, routes its event,
 * and builds one job per endpoint (its body signed later, encrypted now for an
 * endpoint with a key, so no plaintext rests in the queue) and the answer.
 * @param submission the tenant, the body and the idempotency key
 * @param context the time, the message id, the routes, the keys and randomness
 * @returns the batch to queue and the answer
 * @throws {HttpError} `ERR_HTTP_INVALID_JSON` for a body that is not JSON
 * @throws {RelayError} `ERR_RELAY_INVALID_WEBHOOK` naming the bad field
 * @example
 * ```ts
 * const accepted = acceptWebhook(
 *   { tenantId: "acme", body: new TextEncoder().encode('{"event":"order.paid","data":{}}'), idempotencyKey: undefined },
 *   { now, timestamp: new Date(now).toISOString(), messageId: "msg_1", route: (event) => registry.route("acme", event), encryptionKey: undefined, random, idempotencyTtlMs: 86_400_000 },
 * );
 * await queue.enqueue(accepted.batch);
 * ```
 */
export function acceptWebhook(
  submission: WebhookSubmission,
  context: IntakeContext,
): AcceptedWebhook {
  const webhook = parseWebhook(submission.body);
  const { messageId, now } = context;
  const endpoints = context.route(webhook.event);
  // Event names and endpoint ids are checked to need no JSON escaping.
  const head = `{"type":"${webhook.event}","timestamp":"${context.timestamp}"`;
  const payload = `${head},"data":${webhook.data}}`;
  const jobs = endpoints.map((endpoint): Job => {
    const key = endpoint.publicKey ?? context.encryptionKey;
    return {
      id: `${messageId}.${endpoint.id}`,
      messageId,
      tenantId: endpoint.tenantId,
      endpointId: endpoint.id,
      event: webhook.event,
      body: key === undefined ? payload : sealedPayload(head, payload, key, context.random),
      contentType: JSON_TYPE,
      createdAt: now,
      dueAt: now,
      attempts: NO_ATTEMPTS,
    };
  });
  const response = `{"id":"${messageId}","event":"${webhook.event}","endpoints":[${
    endpoints.map((endpoint) => `"${endpoint.id}"`).join(",")
  }]}`;
  const key = submission.idempotencyKey;
  const bodyHash = key === undefined ? "" : sha256Hex(submission.body);
  const batch: EnqueueBatch = key === undefined
    ? { tenantId: submission.tenantId, messageId, jobs }
    : {
      tenantId: submission.tenantId,
      messageId,
      jobs,
      idempotency: {
        key,
        answer: { bodyHash, messageId, response },
        expiresAt: now + context.idempotencyTtlMs,
      },
    };
  return { batch, response, bodyHash };
}

/**
 * The answer to a webhook once the queue has said what it did: 202 with the
 * message, or the first answer again for a used idempotency key.
 * @param result what the queue did with the batch
 * @param accepted what {@linkcode acceptWebhook} decided
 * @param base the prefix of the status route, for `Location`
 * @returns the response
 * @throws {RelayError} `ERR_RELAY_IDEMPOTENCY_CONFLICT` (409) when the key was used with another body
 */
export function webhookAnswer(
  result: EnqueueResult,
  accepted: AcceptedWebhook,
  base: string,
): HttpResponse {
  if (!result.accepted) {
    if (result.previous.bodyHash !== accepted.bodyHash) {
      throw new RelayError(
        "ERR_RELAY_IDEMPOTENCY_CONFLICT",
        "Cannot accept the webhook: its Idempotency-Key was used with another body",
        { target: "idempotency-key" },
      );
    }
    return {
      status: 202,
      headers: { "content-type": `${JSON_TYPE}; charset=utf-8`, "idempotent-replayed": "true" },
      body: result.previous.response,
    };
  }
  // The response is ASCII: its length in characters is its length in bytes.
  return {
    status: 202,
    headers: {
      "content-type": `${JSON_TYPE}; charset=utf-8`,
      location: `${base}/messages/${accepted.batch.messageId}`,
      "content-length": String(accepted.response.length),
    },
    body: accepted.response,
  };
}

/**
 * `{"event": "<name>", "data": ` at the start of a body, JSON whitespace
 * allowed: the shape clients send, read without parsing the whole body.
 */
const COMMON_HEAD =
  /^[ \t\n\r]*\{[ \t\n\r]*"event"[ \t\n\r]*:[ \t\n\r]*"([^"\\]*)"[ \t\n\r]*,[ \t\n\r]*"data"[ \t\n\r]*:(?=[ \t\n\r]*\{)/;

/** Whether a UTF-16 unit is JSON white space: space, tab, line feed or carriage return. */
function isJsonSpace(unit: number): boolean {
  return unit === 0x20 || unit === 0x09 || unit === 0x0a || unit === 0x0d;
}

/** Whether `text` holds only JSON white space from `from` to `to`. */
function spaceUntil(text: string, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (!isJsonSpace(text.charCodeAt(i))) return false;
  return true;
}

/**
 * The webhook's event, and its data as the JSON text the client sent (so
 * numbers keep every digit). A body shaped `{"event": "...", "data": {...}}`
 * is checked by parsing the data alone; any other is parsed whole.
 */
export function parseWebhook(bytes: Uint8Array): { event: string; data: string } {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw new HttpError(
      "ERR_HTTP_INVALID_JSON",
      "Cannot read the webhook: the body is not valid UTF-8",
    );
  }
  checkJsonDepth(text, MAX_DEPTH);
  const head = COMMON_HEAD.exec(text);
  if (head !== null) {
    const end = text.lastIndexOf("}");
    const event = head[1]!;
    if (
      spaceUntil(text, end + 1, text.length) && event.length <= MAX_EVENT_LENGTH &&
      EVENT_NAME.test(event)
    ) {
      // JSON's own white space only (trim() would also drop U+00A0 and U+FEFF, which JSON refuses),
      // found by index: the data is one slice of the body, neither searched by a pattern nor copied.
      let from = head[0].length;
      let to = end;
      while (from < to && isJsonSpace(text.charCodeAt(from))) from++;
      while (to > from && isJsonSpace(text.charCodeAt(to - 1))) to--;
      const data = text.slice(from, to);
      try {
        // Valid, the data is one JSON object (the head saw its "{"), so the whole body is valid too.
        JSON.parse(data);
        return { event: ownEventName(event), data };
      } catch {
        // Not one value, e.g. a repeated "data" member: the full parse below decides.
      }
    }
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HttpError(
      "ERR_HTTP_INVALID_JSON",
      `Cannot read the webhook: the body is not JSON (${(error as Error).message})`,
    );
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw invalidWebhook('The body must be a JSON object {"event": string, "data": object}');
  }
  for (const key of Object.keys(value)) {
    if (!WEBHOOK_FIELDS.has(key)) {
      throw invalidWebhook(`Field "${key}" is unknown; a webhook has "event" and "data"`, key);
    }
  }
  const { event, data } = value as { event?: unknown; data?: unknown };
  if (event === undefined) throw invalidWebhook('Field "event" is required', "event");
  if (typeof event !== "string") throw invalidWebhook('Field "event" must be a string', "event");
  if (event.length > MAX_EVENT_LENGTH || !EVENT_NAME.test(event)) {
    throw invalidWebhook(
      `Field "event" must be dot-separated words of letters, digits, "_", "-" or ":", at most ${MAX_EVENT_LENGTH} characters`,
      "event",
    );
  }
  if (data === undefined) throw invalidWebhook('Field "data" is required', "data");
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw invalidWebhook('Field "data" must be a JSON object', "data");
  }
  return { event, data: memberText(text, "data") };
}

/**
 * An event name found in a body, as a string that does not hold the body: V8
 * keeps a part of a string of 13 characters or more as a view of the whole,
 * and a job keeps its event long after its body is delivered (the status
 * API's retention) or sealed. One copy per name, shared by its jobs; the name
 * needs no JSON escaping (the caller checked it against EVENT_NAME).
 */
function ownEventName(event: string): string {
  const known = eventNames.get(event);
  if (known !== undefined) return known;
  if (eventNames.size >= MAX_EVENT_NAMES) eventNames.clear();
  const own = JSON.parse(`"${event}"`) as string;
  eventNames.set(own, own);
  return own;
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

function invalidWebhook(message: string, target?: string): RelayError {
  return new RelayError(
    "ERR_RELAY_INVALID_WEBHOOK",
    `Cannot accept the webhook: ${message}`,
    target === undefined ? {} : { target },
  );
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
function sealedPayload(
  head: string,
  payload: string,
  key: RsaPublicKey,
  random: (size: number) => Uint8Array,
): string {
  // A compact JWE is base64url and dots: it needs no JSON escaping.
  return `${head},"encrypted":"${encryptJwe(encoder.encode(payload), key, random)}"}`;
}

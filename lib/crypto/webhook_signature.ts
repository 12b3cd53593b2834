import { createHmac } from "node:crypto";
import { CryptoError } from "./errors.ts";
import { timingSafeEqual } from "./timing_safe_equal.ts";

const SECRET_PREFIX = "whsec_";
const MIN_SECRET_BYTES = 24;
const MAX_SECRET_BYTES = 64;
const NEW_SECRET_BYTES = 32;
const DEFAULT_TOLERANCE_SECONDS = 300;
// At most 15 digits keeps the value a safe integer; signs, spaces and exponents are refused.
const TIMESTAMP_PATTERN = /^[0-9]{1,15}$/;

/** The three Standard Webhooks headers, as received (a missing header is `undefined`). */
export interface WebhookHeaders {
  /** The `webhook-id` header. */
  readonly id?: string | undefined;
  /** The `webhook-timestamp` header: unix seconds in decimal. */
  readonly timestamp?: string | undefined;
  /** The `webhook-signature` header: space-separated `version,base64` entries. */
  readonly signature?: string | undefined;
}

/** Options of {@linkcode verifyWebhook}. */
export interface VerifyWebhookOptions {
  /** The current time in unix seconds. */
  readonly now: number;
  /**
   * How far, in seconds, the timestamp may lie before or after `now`.
   * @default {300}
   */
  readonly toleranceSeconds?: number;
}

/**
 * Decodes a Standard Webhooks symmetric secret (`whsec_` and the base64 of
 * 24 to 64 bytes) into the HMAC key.
 * @param secret the secret text
 * @returns the key bytes
 * @throws {TypeError} when the secret is not a string
 * @throws {CryptoError} `ERR_CRYPTO_INVALID_KEY` when the secret is malformed or of the wrong size
 * @example
 * ```ts
 * const key = parseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"); // 24 bytes
 * ```
 */
export function parseWebhookSecret(secret: string): Uint8Array {
  if (typeof secret !== "string") {
    throw new TypeError("Cannot use the webhook secret: it is not a string");
  }
  if (!secret.startsWith(SECRET_PREFIX)) {
    throw new CryptoError(
      "ERR_CRYPTO_INVALID_KEY",
      `Cannot use the webhook secret: it must start with "${SECRET_PREFIX}"`,
    );
  }
  const text = secret.slice(SECRET_PREFIX.length);
  const decoded = Buffer.from(text, "base64");
  // Node skips characters outside the alphabet and ignores stray bits, so
  // only text that re-encodes to itself (padding optional) is base64.
  const canonical = decoded.toString("base64");
  const valid = (text === canonical || text === canonical.replace(/=+$/, "")) &&
    decoded.length >= MIN_SECRET_BYTES && decoded.length <= MAX_SECRET_BYTES;
  // The key gets its own memory, and the decoder's (possibly pooled) copy is wiped.
  const key = new Uint8Array(decoded);
  decoded.fill(0);
  if (!valid) {
    key.fill(0);
    throw new CryptoError(
      "ERR_CRYPTO_INVALID_KEY",
      `Cannot use the webhook secret: it must be "${SECRET_PREFIX}" followed by the base64 ` +
        `of ${MIN_SECRET_BYTES} to ${MAX_SECRET_BYTES} bytes`,
    );
  }
  return key;
}

/**
 * Makes a new Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes.
 * @param random gives random bytes
 * @returns the secret text, which {@linkcode parseWebhookSecret} accepts
 * @throws {RangeError} when `random` does not give the 32 bytes asked for
 */
export function newWebhookSecret(random: (size: number) => Uint8Array): string {
  const bytes = random(NEW_SECRET_BYTES);
  if (!(bytes instanceof Uint8Array) || bytes.length !== NEW_SECRET_BYTES) {
    throw new RangeError(
      `Cannot make a webhook secret: random(${NEW_SECRET_BYTES}) did not give ` +
        `${NEW_SECRET_BYTES} bytes`,
    );
  }
  const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
  bytes.fill(0);
  return SECRET_PREFIX + text;
}

/**
 * Signs a webhook delivery the Standard Webhooks way (`v1`, HMAC-SHA256 over
 * `id.timestamp.body`). Several keys, as during a secret rotation, give
 * several space-separated signatures, any of which verifies.
 * @param secrets one key or several, e.g. from {@linkcode parseWebhookSecret}
 * @param id the `webhook-id`, stable across retries
 * @param timestamp the attempt's time in unix seconds
 * @param body the exact body sent (a string is signed as UTF-8)
 * @returns the `webhook-signature` header value, e.g.
 * `v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=`
 * @throws {TypeError} when the id is empty or contains ".", or an argument has the wrong type
 * @throws {RangeError} when the timestamp is not a non-negative safe integer, or no key is given
 * @example
 * ```ts
 * const key = parseWebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
 * signWebhook(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, '{"test": 2432232314}');
 * // "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
 * ```
 */
export function signWebhook(
  secrets: readonly Uint8Array[] | Uint8Array,
  id: string,
  timestamp: number,
  body: Uint8Array | string,
): string {
  const keys = checkKeys(secrets, "sign");
  checkBody(body, "sign");
  if (typeof id !== "string" || id === "" || id.includes(".")) {
    throw new TypeError('Cannot sign the webhook: the id must be a non-empty string without "."');
  }
  if (typeof timestamp !== "number") {
    throw new TypeError("Cannot sign the webhook: the timestamp is not a number");
  }
  if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw new RangeError(
      `Cannot sign the webhook: the timestamp ${timestamp} is not a non-negative integer`,
    );
  }
  const signed = `${id}.${timestamp}.`;
  let header = "";
  for (const key of keys) {
    header += `${header === "" ? "" : " "}v1,${hmacBase64(key, signed, body)}`;
  }
  return header;
}

/**
 * Verifies a Standard Webhooks delivery: the headers are present, the
 * timestamp is within the tolerance of `now`, and one `v1` signature matches
 * one of the keys. Entries of other versions (`v1a`, `v2`) are ignored.
 * @param secrets one key or several (any may match)
 * @param headers the `webhook-id`, `webhook-timestamp` and `webhook-signature` values
 * @param body the exact body received
 * @param options the current time and the tolerance
 * @throws {CryptoError} `ERR_CRYPTO_SIGNATURE_INVALID` when a header is missing or malformed,
 * the timestamp is too old or too new, or no signature matches
 * @throws {TypeError} when an argument has the wrong type
 * @throws {RangeError} when no key is given or the tolerance is negative
 * @example
 * ```ts
 * verifyWebhook(key, { id, timestamp, signature }, body, { now: Math.floor(Date.now() / 1000) });
 * ```
 */
export function verifyWebhook(
  secrets: readonly Uint8Array[] | Uint8Array,
  headers: WebhookHeaders,
  body: Uint8Array | string,
  options: VerifyWebhookOptions,
): void {
  const keys = checkKeys(secrets, "verify");
  checkBody(body, "verify");
  const { now } = options;
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (typeof now !== "number" || !Number.isFinite(now)) {
    throw new TypeError("Cannot verify the webhook: options.now is not a finite number");
  }
  if (typeof tolerance !== "number" || !(tolerance >= 0) || tolerance === Infinity) {
    throw new RangeError(
      "Cannot verify the webhook: options.toleranceSeconds is not a non-negative number",
    );
  }
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature) {
    throw invalid("a webhook-id, webhook-timestamp or webhook-signature header is missing");
  }
  if (id.includes(".")) throw invalid('the webhook-id header contains "."');
  if (!TIMESTAMP_PATTERN.test(timestamp)) {
    throw invalid("the webhook-timestamp header is not a number of seconds");
  }
  const seconds = Number(timestamp);
  if (now - seconds > tolerance) throw invalid("the timestamp is too old");
  if (seconds - now > tolerance) throw invalid("the timestamp is too new");

  // The header's own digits are what the sender signed.
  const signed = `${id}.${timestamp}.`;
  const expected = keys.map((key) => hmacBase64(key, signed, body));
  for (const entry of signature.split(" ")) {
    if (!entry.startsWith("v1,")) continue;
    const candidate = entry.slice(3);
    for (const mac of expected) if (timingSafeEqual(candidate, mac)) return;
  }
  throw invalid("no v1 signature matches");
}

function hmacBase64(key: Uint8Array, signed: string, body: Uint8Array | string): string {
  return createHmac("sha256", key).update(signed).update(body).digest("base64");
}

function checkKeys(
  secrets: readonly Uint8Array[] | Uint8Array,
  action: string,
): readonly Uint8Array[] {
  const keys = secrets instanceof Uint8Array ? [secrets] : secrets;
  if (!Array.isArray(keys)) {
    throw new TypeError(`Cannot ${action} the webhook: the secrets are not a Uint8Array or a list`);
  }
  if (keys.length === 0) throw new RangeError(`Cannot ${action} the webhook: no secret is given`);
  for (const key of keys) {
    if (!(key instanceof Uint8Array) || key.length === 0) {
      throw new TypeError(`Cannot ${action} the webhook: a secret is not a non-empty Uint8Array`);
    }
  }
  return keys;
}

function checkBody(body: Uint8Array | string, action: string): void {
  if (typeof body !== "string" && !(body instanceof Uint8Array)) {
    throw new TypeError(`Cannot ${action} the webhook: the body is not a string or a Uint8Array`);
  }
}

function invalid(reason: string): CryptoError {
  return new CryptoError("ERR_CRYPTO_SIGNATURE_INVALID", `Cannot verify the webhook: ${reason}`);
}

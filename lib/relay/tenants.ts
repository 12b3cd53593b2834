import { newWebhookSecret } from "../crypto/_internal.ts";
import { parseRsaKey, parseWebhookSecret, type RsaPublicKey, sha256Hex } from "../crypto/mod.ts";
import { RelayError } from "./errors.ts";
import { compileEventPatterns, type EventMatcher } from "./event_patterns.ts";

/** A signing secret of an endpoint; an old one signs alongside the new until it expires. */
export interface SigningSecret {
  /** The `whsec_` form, shown to the tenant. */
  readonly secret: string;
  readonly key: Uint8Array;
  /** When it stops signing; null for the current secret. */
  readonly expiresAt: number | null;
}

/** Where a tenant's messages go. */
export interface Endpoint {
  readonly id: string;
  readonly tenantId: string;
  readonly url: string;
  readonly events: EventMatcher;
  /** Newest first. */
  readonly secrets: readonly SigningSecret[];
  /** The PEM the tenant gave, when deliveries are encrypted for it. */
  readonly publicKeyPem: string | undefined;
  readonly publicKey: RsaPublicKey | undefined;
  /** Deliveries per second at most; undefined for no limit. */
  readonly rateLimitPerSecond: number | undefined;
  readonly enabled: boolean;
  /** Why it was disabled, e.g. the receiver answered 410. */
  readonly disabledReason: string | null;
  readonly createdAt: number;
  readonly updatedAt: number;
}

/** A sender of webhooks, known by its API keys. */
export interface Tenant {
  readonly id: string;
  /** SHA-256 (hex) of each API key. */
  readonly keyHashes: readonly string[];
}

/** What a tenant may set on an endpoint, as JSON gives it (snake case). */
export interface EndpointInput {
  readonly id?: unknown;
  readonly url?: unknown;
  readonly events?: unknown;
  readonly secret?: unknown;
  readonly public_key?: unknown;
  readonly rate_limit_per_second?: unknown;
  readonly enabled?: unknown;
}

/** Options of {@linkcode TenantRegistry}. */
export interface TenantRegistryOptions {
  /** Wall clock, milliseconds since the epoch. */
  readonly now: () => number;
  /** Random bytes, for new ids and secrets. */
  readonly random: (size: number) => Uint8Array;
  /**
   * How long a rotated-out secret keeps signing, milliseconds.
   * @default {86400000}
   */
  readonly secretOverlapMs?: number;
  /**
   * Endpoints per tenant at most.
   * @default {1000}
   */
  readonly maxEndpointsPerTenant?: number;
}

/** Events whose routes a tenant remembers at most; more start the memory afresh. */
export const MAX_ROUTES_PER_TENANT = 1024;

/** API keys remembered by `authenticate` once they matched; past it, the memory starts again. */
const MAX_KNOWN_KEYS = 4096;

/** Identifiers of tenants and endpoints. */
export const RELAY_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** The fields an endpoint is created with (the API's body, a tenants file's entry). */
export const ENDPOINT_FIELDS: ReadonlySet<keyof EndpointInput> = new Set([
  "id",
  "url",
  "events",
  "secret",
  "public_key",
  "rate_limit_per_second",
  "enabled",
]);
/** The fields a change of an endpoint may set. */
export const UPDATE_FIELDS: ReadonlySet<keyof EndpointInput> = new Set([
  "url",
  "events",
  "public_key",
  "rate_limit_per_second",
  "enabled",
]);
/** The longest endpoint URL. */
export const MAX_URL_LENGTH = 2048;

/**
 * Tenants and their endpoints, in memory: loaded from the tenants file and
 * changed through the endpoint API. Finds a tenant by API key (by its hash)
 * and the endpoints an event goes to.
 * @example
 * ```ts
 * const registry = new TenantRegistry({ now: Date.now, random: pooledRandom() });
 * registry.addTenant("acme", [sha256Hex("acme-key")]);
 * registry.createEndpoint("acme", { url: "https://hooks.acme.example/in", events: ["order.*"] });
 * registry.route("acme", "order.created"); // [the endpoint]
 * ```
 */
export class TenantRegistry {
  readonly #now: () => number;
  readonly #random: (size: number) => Uint8Array;
  readonly #overlap: number;
  readonly #maxEndpoints: number;
  readonly #tenants = new Map<string, Tenant>();
  readonly #byKeyHash = new Map<string, Tenant>();
  /** Keys that matched lately, to their tenants (tenants are only ever added, never changed). */
  readonly #byKey = new Map<string, Tenant>();
  readonly #endpoints = new Map<string, Map<string, Endpoint>>();
  /** Each tenant's routes by event, forgotten on any change to its endpoints. */
  readonly #routes = new Map<string, Map<string, readonly Endpoint[]>>();

  /**
   * Creates an empty registry.
   * @param options clock, randomness and limits
   */
  constructor(options: TenantRegistryOptions) {
    this.#now = options.now;
    this.#random = options.random;
    this.#overlap = options.secretOverlapMs ?? 86_400_000;
    this.#maxEndpoints = options.maxEndpointsPerTenant ?? 1000;
  }

  /**
   * Adds a tenant.
   * @param id the tenant's id
   * @param keyHashes SHA-256 (hex) of its API keys
   * @throws {RelayError} `ERR_RELAY_INVALID_TENANTS` for a bad or taken id, or a key another tenant has
   */
  addTenant(id: string, keyHashes: readonly string[]): Tenant {
    if (!RELAY_ID.test(id)) {
      throw invalidTenants(
        `tenant id ${JSON.stringify(id)} must be 1 to 64 letters, digits, "_" or "-"`,
      );
    }
    if (this.#tenants.has(id)) throw invalidTenants(`tenant id "${id}" appears twice`);
    for (const hash of keyHashes) {
      if (this.#byKeyHash.has(hash)) {
        throw invalidTenants(
          `an API key of tenant "${id}" is also a key of tenant "${this.#byKeyHash.get(hash)!.id}"`,
        );
      }
    }
    const tenant: Tenant = { id, keyHashes: [...keyHashes] };
    this.#tenants.set(id, tenant);
    for (const hash of keyHashes) this.#byKeyHash.set(hash, tenant);
    this.#endpoints.set(id, new Map());
    return tenant;
  }

  /** All tenants. */
  tenants(): Tenant[] {
    return [...this.#tenants.values()];
  }

  /** The tenant whose API key this is; undefined for an unknown key. */
  authenticate(key: string): Tenant | undefined {
    // A key that matched is found again by one lookup (by the key, as a Map finds it), not hashed each time.
    const known = this.#byKey.get(key);
    if (known !== undefined) return known;
    const tenant = this.#byKeyHash.get(sha256Hex(key));
    if (tenant !== undefined) {
      if (this.#byKey.size >= MAX_KNOWN_KEYS) this.#byKey.clear();
      this.#byKey.set(key, tenant);
    }
    return tenant;
  }

  /** A tenant's endpoints, in the order they were made. */
  endpoints(tenantId: string): Endpoint[] {
    return [...(this.#endpoints.get(tenantId)?.values() ?? [])];
  }

  /** One endpoint of a tenant. */
  endpoint(tenantId: string, id: string): Endpoint | undefined {
    return this.#endpoints.get(tenantId)?.get(id);
  }

  /**
   * The enabled endpoints of a tenant that subscribe to `event`, remembered
   * (for up to {@linkcode MAX_ROUTES_PER_TENANT} events) until the tenant's
   * endpoints change: intake routes in O(1) however many endpoints there are.
   */
  route(tenantId: string, event: string): readonly Endpoint[] {
    let routes = this.#routes.get(tenantId);
    const known = routes?.get(event);
    if (known !== undefined) return known;
    const found: Endpoint[] = [];
    for (const endpoint of this.#endpoints.get(tenantId)?.values() ?? []) {
      if (endpoint.enabled && endpoint.events.matches(event)) found.push(endpoint);
    }
    if (routes === undefined || routes.size >= MAX_ROUTES_PER_TENANT) {
      this.#routes.set(tenantId, routes = new Map());
    }
    routes.set(event, found);
    return found;
  }

  /**
   * Creates an endpoint from JSON input; the id and the secret are made when absent.
   * @param tenantId the tenant
   * @param input the fields
   * @param field where the input came from, for errors (e.g. `endpoints[2]`)
   * @returns the endpoint
   * @throws {RelayError} `ERR_RELAY_INVALID_ENDPOINT` naming the bad field, `ERR_RELAY_ENDPOINT_EXISTS`
   */
  createEndpoint(tenantId: string, input: unknown, field = ""): Endpoint {
    return this.put(this.planCreate(tenantId, input, field));
  }

  /**
   * The endpoint {@linkcode createEndpoint} would make, checked against the
   * registry as it is, without keeping it: for a store to keep first.
   * @throws {RelayError} as {@linkcode createEndpoint}
   */
  planCreate(tenantId: string, input: unknown, field = ""): Endpoint {
    const endpoints = this.#tenantEndpoints(tenantId);
    const fields = record(input, field, ENDPOINT_FIELDS);
    const id = fields.id === undefined
      ? `ep_${hexOf(this.#random(8))}`
      : readId(fields.id, at(field, "id"));
    if (endpoints.has(id)) {
      throw new RelayError(
        "ERR_RELAY_ENDPOINT_EXISTS",
        `Cannot create endpoint "${id}": the tenant has one with that id`,
        { target: at(field, "id") },
      );
    }
    if (endpoints.size >= this.#maxEndpoints) {
      throw invalidEndpoint(field, `the tenant has its limit of ${this.#maxEndpoints} endpoints`);
    }
    const secret = fields.secret === undefined
      ? newWebhookSecret(this.#random)
      : readSecret(fields.secret, at(field, "secret"));
    const now = this.#now();
    const publicKeyPem = readOptionalPem(fields.public_key, at(field, "public_key"));
    const endpoint: Endpoint = {
      id,
      tenantId,
      url: readUrl(fields.url, at(field, "url")),
      events: readEvents(fields.events, at(field, "events")),
      secrets: [{ secret, key: parseWebhookSecret(secret), expiresAt: null }],
      publicKeyPem,
      publicKey: publicKeyPem === undefined
        ? undefined
        : readKey(publicKeyPem, at(field, "public_key")),
      rateLimitPerSecond: readRate(
        fields.rate_limit_per_second,
        at(field, "rate_limit_per_second"),
      ),
      enabled: readEnabled(fields.enabled, at(field, "enabled")) ?? true,
      disabledReason: null,
      createdAt: now,
      updatedAt: now,
    };
    return endpoint;
  }

  /**
   * Changes fields of an endpoint; `null` removes the public key or the rate limit.
   * Enabling clears the reason it was disabled.
   * @param tenantId the tenant
   * @param id the endpoint
   * @param input the fields to change
   * @returns the endpoint as changed
   * @throws {RelayError} `ERR_RELAY_UNKNOWN_ENDPOINT`, `ERR_RELAY_INVALID_ENDPOINT`
   */
  updateEndpoint(tenantId: string, id: string, input: unknown): Endpoint {
    return this.put(this.planUpdate(tenantId, id, input));
  }

  /** The endpoint {@linkcode updateEndpoint} would make, without keeping it. */
  planUpdate(tenantId: string, id: string, input: unknown): Endpoint {
    const current = this.#existing(tenantId, id);
    const fields = record(input, "", UPDATE_FIELDS);
    const publicKeyPem = fields.public_key === undefined
      ? current.publicKeyPem
      : readOptionalPem(fields.public_key, "public_key");
    const enabled = readEnabled(fields.enabled, "enabled") ?? current.enabled;
    const updated: Endpoint = {
      ...current,
      url: fields.url === undefined ? current.url : readUrl(fields.url, "url"),
      events: fields.events === undefined ? current.events : readEvents(fields.events, "events"),
      publicKeyPem,
      publicKey: publicKeyPem === current.publicKeyPem
        ? current.publicKey
        : publicKeyPem === undefined
        ? undefined
        : readKey(publicKeyPem, "public_key"),
      rateLimitPerSecond: fields.rate_limit_per_second === undefined
        ? current.rateLimitPerSecond
        : readRate(fields.rate_limit_per_second, "rate_limit_per_second"),
      enabled,
      disabledReason: enabled ? null : current.disabledReason ?? "disabled by the tenant",
      updatedAt: this.#now(),
    };
    return updated;
  }

  /**
   * Disables an endpoint, e.g. when its receiver answered 410 Gone.
   * @param tenantId the tenant
   * @param id the endpoint
   * @param reason why, shown on the endpoint
   * @returns the endpoint, or undefined when it no longer exists
   */
  disableEndpoint(tenantId: string, id: string, reason: string): Endpoint | undefined {
    const disabled = this.planDisable(tenantId, id, reason);
    return disabled === undefined ? undefined : this.put(disabled);
  }

  /** The endpoint {@linkcode disableEndpoint} would make, without keeping it. */
  planDisable(tenantId: string, id: string, reason: string): Endpoint | undefined {
    const current = this.endpoint(tenantId, id);
    if (current === undefined) return undefined;
    return { ...current, enabled: false, disabledReason: reason, updatedAt: this.#now() };
  }

  /**
   * Deletes an endpoint.
   * @returns whether it existed
   */
  deleteEndpoint(tenantId: string, id: string): boolean {
    this.#routes.delete(tenantId);
    return this.#endpoints.get(tenantId)?.delete(id) ?? false;
  }

  /**
   * Keeps an endpoint as given, in place of one with its id (a change made
   * by a plan, or read from a store).
   * @param endpoint the endpoint; its tenant must be known
   * @returns the endpoint
   * @throws {TypeError} for an unknown tenant
   */
  put(endpoint: Endpoint): Endpoint {
    this.#tenantEndpoints(endpoint.tenantId).set(endpoint.id, endpoint);
    this.#routes.delete(endpoint.tenantId);
    return endpoint;
  }

  /** Whether a tenant of this id is known. */
  hasTenant(tenantId: string): boolean {
    return this.#tenants.has(tenantId);
  }

  /**
   * Gives an endpoint a new signing secret (made when not given); the old one
   * keeps signing alongside it for the overlap, so receivers can switch.
   * @param tenantId the tenant
   * @param id the endpoint
   * @param secret the new secret, or undefined to make one
   * @returns the endpoint as changed
   * @throws {RelayError} `ERR_RELAY_UNKNOWN_ENDPOINT`, `ERR_RELAY_INVALID_ENDPOINT` for a malformed secret
   */
  rotateSecret(tenantId: string, id: string, secret?: unknown): Endpoint {
    return this.put(this.planRotate(tenantId, id, secret));
  }

  /** The endpoint {@linkcode rotateSecret} would make, without keeping it. */
  planRotate(tenantId: string, id: string, secret?: unknown): Endpoint {
    const current = this.#existing(tenantId, id);
    const fresh = secret === undefined
      ? newWebhookSecret(this.#random)
      : readSecret(secret, "secret");
    const now = this.#now();
    const kept = current.secrets.filter((old) =>
      old.secret !== fresh && (old.expiresAt === null || old.expiresAt > now)
    );
    const secrets: SigningSecret[] = [
      { secret: fresh, key: parseWebhookSecret(fresh), expiresAt: null },
      ...kept.map((old) => ({ ...old, expiresAt: old.expiresAt ?? now + this.#overlap })),
    ];
    return { ...current, secrets, updatedAt: now };
  }

  #tenantEndpoints(tenantId: string): Map<string, Endpoint> {
    const endpoints = this.#endpoints.get(tenantId);
    if (endpoints === undefined) throw new TypeError(`Cannot find tenant "${tenantId}"`);
    return endpoints;
  }

  #existing(tenantId: string, id: string): Endpoint {
    const endpoint = this.#tenantEndpoints(tenantId).get(id);
    if (endpoint === undefined) {
      throw new RelayError(
        "ERR_RELAY_UNKNOWN_ENDPOINT",
        `Cannot find endpoint "${id}" of this tenant`,
      );
    }
    return endpoint;
  }
}

/** The keys that sign a delivery made at `now`: the current secret and those still overlapping. */
export function signingKeys(endpoint: Endpoint, now: number): Uint8Array[] {
  const keys: Uint8Array[] = [];
  for (const secret of endpoint.secrets) {
    if (secret.expiresAt === null || secret.expiresAt > now) keys.push(secret.key);
  }
  return keys;
}

function at(field: string, name: string): string {
  return field === "" ? name : `${field}.${name}`;
}

function record(input: unknown, field: string, allowed: ReadonlySet<string>): EndpointInput {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    throw invalidEndpoint(field, "it must be a JSON object");
  }
  for (const key of Object.keys(input)) {
    if (!allowed.has(key)) {
      throw new RelayError(
        "ERR_RELAY_INVALID_ENDPOINT",
        `Cannot use field ${at(field, key)}: it is unknown here; known: ${[...allowed].join(", ")}`,
        {
          target: at(field, key),
        },
      );
    }
  }
  return input as EndpointInput;
}

function invalidEndpoint(field: string, why: string, cause?: unknown): RelayError {
  return new RelayError(
    "ERR_RELAY_INVALID_ENDPOINT",
    `Cannot use ${field === "" ? "the endpoint" : field}: ${why}`,
    {
      ...(field === "" ? {} : { target: field }),
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

function invalidTenants(why: string): RelayError {
  return new RelayError("ERR_RELAY_INVALID_TENANTS", `Cannot load the tenants: ${why}`);
}

function readId(value: unknown, field: string): string {
  if (typeof value !== "string" || !RELAY_ID.test(value)) {
    throw invalidEndpoint(field, 'it must be 1 to 64 letters, digits, "_" or "-"');
  }
  return value;
}

function readUrl(value: unknown, field: string): string {
  if (typeof value !== "string") {
    throw invalidEndpoint(field, "it is required, an http or https URL");
  }
  if (value.length > MAX_URL_LENGTH) {
    throw invalidEndpoint(field, `it is longer than ${MAX_URL_LENGTH} characters`);
  }
  const url = URL.parse(value);
  if (url === null || (url.protocol !== "http:" && url.protocol !== "https:")) {
    throw invalidEndpoint(field, `${JSON.stringify(value)} is not an http or https URL`);
  }
  if (url.username !== "" || url.password !== "") {
    throw invalidEndpoint(field, "it must not hold a user name or password");
  }
  if (url.hash !== "") throw invalidEndpoint(field, "it must not hold a fragment (#...)");
  return url.href;
}

function readEvents(value: unknown, field: string): EventMatcher {
  if (!Array.isArray(value)) {
    throw invalidEndpoint(field, 'it is required, a list of event patterns ("*" for all)');
  }
  return compileEventPatterns(value, field);
}

function readSecret(value: unknown, field: string): string {
  if (typeof value !== "string") {
    throw invalidEndpoint(field, 'it must be a string, "whsec_" and base64');
  }
  try {
    parseWebhookSecret(value);
  } catch (error) {
    throw invalidEndpoint(
      field,
      'it must be "whsec_" followed by the base64 of 24 to 64 random bytes',
      error,
    );
  }
  return value;
}

function readOptionalPem(value: unknown, field: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") {
    throw invalidEndpoint(field, "it must be an RSA public key in PEM form");
  }
  return value;
}

function readKey(pem: string, field: string): RsaPublicKey {
  // A private key would also give its public half; refusing it keeps private keys out of the registry and its stores.
  if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(pem)) {
    throw invalidEndpoint(
      field,
      "it is a private key: give the endpoint's public key, and keep the private one with the receiver",
    );
  }
  try {
    return parseRsaKey(pem);
  } catch (error) {
    throw invalidEndpoint(
      field,
      "it must be an RSA public key of at least 2048 bits in PEM form",
      error,
    );
  }
}

/** The slowest rate an endpoint may have: one delivery every 100 seconds (slower, its jobs would all but never go). */
/** The lowest rate limit of an endpoint, deliveries per second; the highest is {@linkcode MAX_RATE}. */
export const MIN_RATE = 0.01;
/** The highest rate limit of an endpoint, deliveries per second. */
export const MAX_RATE = 1_000_000;

function readRate(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (
    typeof value !== "number" || !Number.isFinite(value) || value < MIN_RATE || value > MAX_RATE
  ) {
    throw invalidEndpoint(
      field,
      `it must be a number from ${MIN_RATE} (one delivery every ${
        1 / MIN_RATE
      } s) to ${MAX_RATE}, or null for no limit`,
    );
  }
  return value;
}

function readEnabled(value: unknown, field: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw invalidEndpoint(field, "it must be true or false");
  return value;
}

function hexOf(bytes: Uint8Array): string {
  let text = "";
  for (const byte of bytes) text += byte.toString(16).padStart(2, "0");
  return text;
}

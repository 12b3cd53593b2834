import { parseRsaKey, parseWebhookSecret, sha256Hex } from "../crypto/mod.ts";
import type { ConfigRecord, ConfigStore } from "./config_store.ts";
import { RelayError } from "./errors.ts";
import { compileEventPatterns } from "./event_patterns.ts";
import type { Endpoint, Tenant, TenantRegistry } from "./tenants.ts";

/**
 * What intake, the management API and the worker need of the tenants and
 * their endpoints: look-ups answered from memory at once, and changes that
 * may have to reach a store first. A {@linkcode TenantRegistry} is one (its
 * changes are immediate); an {@linkcode EndpointDirectory} is one whose
 * changes are stored in the relay's backend and shared by every process.
 */
export interface TenantDirectory {
  authenticate(key: string): Tenant | undefined;
  route(tenantId: string, event: string): readonly Endpoint[];
  endpoints(tenantId: string): Endpoint[];
  endpoint(tenantId: string, id: string): Endpoint | undefined;
  createEndpoint(tenantId: string, input: unknown): Endpoint | Promise<Endpoint>;
  updateEndpoint(tenantId: string, id: string, input: unknown): Endpoint | Promise<Endpoint>;
  deleteEndpoint(tenantId: string, id: string): boolean | Promise<boolean>;
  rotateSecret(tenantId: string, id: string, secret?: unknown): Endpoint | Promise<Endpoint>;
  disableEndpoint(
    tenantId: string,
    id: string,
    reason: string,
  ): Endpoint | undefined | Promise<Endpoint | undefined>;
}

/** Who last set an endpoint: the tenants file (while the API has not changed it) or the API. */
export type EndpointOrigin = "file" | "api";

/** An endpoint's record in the store: the endpoint, or its tombstone, and where it came from. */
interface EndpointEntry {
  readonly origin: EndpointOrigin;
  /** For `file`: the digest of what the file said, to see the file change. */
  readonly file: string | null;
  /** Undefined for a deleted endpoint: the tombstone keeps the file from bringing it back. */
  readonly endpoint: Endpoint | undefined;
}

/** What the start-up reconciliation of the tenants file with the store did. */
export interface DirectoryOpening {
  /** Endpoints read from the store. */
  readonly loaded: number;
  /** Endpoints of the file written to the store (new, or changed in the file while the API left them alone). */
  readonly seeded: number;
  /** Endpoints of the file the API has changed or deleted: the store's version is used. */
  readonly keptFromApi: readonly string[];
  /** Endpoints the file no longer lists that came from it: deleted. */
  readonly removed: number;
}

/** Options of {@linkcode EndpointDirectory}. */
export interface EndpointDirectoryOptions {
  /** Told of a stored record that cannot be read (it is skipped). */
  readonly onError?: (error: unknown) => void;
}

/** Attempts at a change whose store keeps answering that another change came first. */
const MAX_ATTEMPTS = 8;

/**
 * The relay's tenants and endpoints, read from memory and changed through a
 * {@linkcode ConfigStore} shared by every relay process: each change is
 * stored first (from the revision this process knew, made again from the
 * newer one when another process changed the endpoint meanwhile), then
 * applied here; the changes of other processes arrive through the store's
 * watch, within a second, and are applied in revision order.
 *
 * The tenants file and the API combine so: the file's endpoints are written
 * to the store when it does not have them yet; an endpoint the API has
 * changed (a PATCH, a rotated secret) or deleted belongs to the API from then
 * on and the file no longer touches it; an endpoint only the file ever set
 * follows the file (a change in the file is written at the next start, and an
 * endpoint the file no longer lists is deleted). A restart with the same file
 * changes nothing.
 * @example
 * ```ts
 * const directory = new EndpointDirectory(registry, new MemoryConfigStore());
 * await directory.open();
 * await directory.createEndpoint("acme", { url: "https://hooks.acme.example/in", events: ["*"] });
 * ```
 */
export class EndpointDirectory implements TenantDirectory {
  readonly #registry: TenantRegistry;
  readonly #store: ConfigStore;
  readonly #onError: (error: unknown) => void;
  /** What this process has applied, by key: the revision and the entry. */
  readonly #known = new Map<
    string,
    { readonly revision: number; readonly entry: EndpointEntry | undefined }
  >();
  #stopWatching: () => void = () => {};

  /**
   * @param registry the tenants (from the file) and the endpoints of the file, as a start-up made them
   * @param store where the changes are kept
   * @param options where unreadable records are reported
   */
  constructor(
    registry: TenantRegistry,
    store: ConfigStore,
    options: EndpointDirectoryOptions = {},
  ) {
    this.#registry = registry;
    this.#store = store;
    this.#onError = options.onError ?? (() => {});
  }

  /**
   * Reads the store, reconciles the tenants file's endpoints (in the
   * registry now) with it, and follows the other processes' changes.
   * @returns what was read, written and kept
   * @throws {RelayError} `ERR_RELAY_QUEUE_UNAVAILABLE` when the store cannot be used
   */
  async open(): Promise<DirectoryOpening> {
    const fromFile = new Map<string, { readonly endpoint: Endpoint; readonly digest: string }>();
    for (const tenant of this.#registry.tenants()) {
      for (const endpoint of this.#registry.endpoints(tenant.id)) {
        fromFile.set(keyOf(endpoint.tenantId, endpoint.id), {
          endpoint,
          digest: fileDigest(endpoint),
        });
      }
    }
    // Watching first, so that nothing stored between the load and the watch is missed (applying twice is harmless).
    this.#stopWatching = this.#store.watch((record) => this.#apply(record));
    const records = await this.#store.load();
    for (const record of records) this.#apply(record);
    let seeded = 0;
    const keptFromApi: string[] = [];
    for (const [key, file] of fromFile) {
      const wrote = await this.#change(key, (known) => {
        if (known === undefined) {
          return { origin: "file", file: file.digest, endpoint: file.endpoint };
        }
        if (known.origin !== "file" || known.file === file.digest) return undefined;
        const createdAt = known.endpoint?.createdAt ?? file.endpoint.createdAt;
        return { origin: "file", file: file.digest, endpoint: { ...file.endpoint, createdAt } };
      });
      if (wrote !== undefined) seeded++;
      else if (this.#known.get(key)?.entry?.origin === "api") keptFromApi.push(key);
    }
    let removed = 0;
    for (const [key, { entry }] of this.#known) {
      if (
        entry?.origin !== "file" || entry.endpoint === undefined || fromFile.has(key) ||
        !this.#registry.hasTenant(entry.endpoint.tenantId)
      ) continue;
      const wrote = await this.#change(
        key,
        (
          known,
        ) => (known?.origin === "file" && known.endpoint !== undefined
          ? { origin: "file", file: null, endpoint: undefined }
          : undefined),
      );
      if (wrote !== undefined) removed++;
    }
    return { loaded: records.length, seeded, keptFromApi, removed };
  }

  /** Stops following the other processes' changes and closes the store. */
  async close(): Promise<void> {
    this.#stopWatching();
    await this.#store.close();
  }

  authenticate(key: string): Tenant | undefined {
    return this.#registry.authenticate(key);
  }

  route(tenantId: string, event: string): readonly Endpoint[] {
    return this.#registry.route(tenantId, event);
  }

  endpoints(tenantId: string): Endpoint[] {
    return this.#registry.endpoints(tenantId);
  }

  endpoint(tenantId: string, id: string): Endpoint | undefined {
    return this.#registry.endpoint(tenantId, id);
  }

  async createEndpoint(tenantId: string, input: unknown): Promise<Endpoint> {
    // The id is drawn once (and the input checked), so that a retry after a conflict makes the same endpoint.
    const { id } = this.#registry.planCreate(tenantId, input);
    const entry = await this.#change(keyOf(tenantId, id), () => ({
      origin: "api",
      file: null,
      endpoint: this.#registry.planCreate(tenantId, { ...(input as object), id }),
    }));
    return entry!.endpoint!;
  }

  async updateEndpoint(tenantId: string, id: string, input: unknown): Promise<Endpoint> {
    const entry = await this.#change(
      keyOf(tenantId, id),
      () => ({
        origin: "api",
        file: null,
        endpoint: this.#registry.planUpdate(tenantId, id, input),
      }),
    );
    return entry!.endpoint!;
  }

  async deleteEndpoint(tenantId: string, id: string): Promise<boolean> {
    const entry = await this.#change(
      keyOf(tenantId, id),
      () =>
        this.#registry.endpoint(tenantId, id) === undefined
          ? undefined
          : { origin: "api", file: null, endpoint: undefined },
    );
    return entry !== undefined;
  }

  async rotateSecret(tenantId: string, id: string, secret?: unknown): Promise<Endpoint> {
    const entry = await this.#change(
      keyOf(tenantId, id),
      () => ({
        origin: "api",
        file: null,
        endpoint: this.#registry.planRotate(tenantId, id, secret),
      }),
    );
    return entry!.endpoint!;
  }

  async disableEndpoint(
    tenantId: string,
    id: string,
    reason: string,
  ): Promise<Endpoint | undefined> {
    // Not the tenant's doing: an endpoint of the file stays the file's.
    const entry = await this.#change(keyOf(tenantId, id), (known) => {
      const endpoint = this.#registry.planDisable(tenantId, id, reason);
      return endpoint === undefined
        ? undefined
        : { origin: known?.origin ?? "api", file: known?.file ?? null, endpoint };
    });
    return entry?.endpoint;
  }

  /**
   * Makes a change from what this process knows, stores it, and applies it;
   * made again from the newer record when the store says another came first.
   * @param key the endpoint's key
   * @param plan the entry to store, from the known one; undefined for no change
   * @returns the entry stored, or undefined when the plan made no change
   */
  async #change(
    key: string,
    plan: (known: EndpointEntry | undefined) => EndpointEntry | undefined,
  ): Promise<EndpointEntry | undefined> {
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const known = this.#known.get(key);
      const entry = plan(known?.entry);
      if (entry === undefined) return undefined;
      const put = await this.#store.put(key, encodeEntry(entry), known?.revision ?? 0);
      if (put.stored) {
        this.#keep(key, put.revision, entry);
        return entry;
      }
      if (put.current !== undefined) this.#apply(put.current);
    }
    throw new RelayError(
      "ERR_RELAY_QUEUE_UNAVAILABLE",
      "Cannot change the endpoint: other changes to it keep coming first; try again",
      {
        retryAfterMs: 1000,
      },
    );
  }

  /** Applies a stored record newer than what this process has for its key. */
  #apply(record: ConfigRecord): void {
    const known = this.#known.get(record.key);
    if (known !== undefined && known.revision >= record.revision) return;
    let entry: EndpointEntry;
    try {
      entry = decodeEntry(record.key, record.value);
    } catch (error) {
      this.#known.set(record.key, { revision: record.revision, entry: known?.entry });
      this.#onError(error);
      return;
    }
    this.#keep(record.key, record.revision, entry);
  }

  /** Keeps an entry at its revision, unless a newer one is known, and serves its endpoint. */
  #keep(key: string, revision: number, entry: EndpointEntry): void {
    const known = this.#known.get(key);
    if (known !== undefined && known.revision >= revision) return;
    this.#known.set(key, { revision, entry });
    const [tenantId, id] = splitKey(key);
    // Endpoints of a tenant this process does not know (not in its tenants file) are kept in the store, not served.
    if (!this.#registry.hasTenant(tenantId)) return;
    if (entry.endpoint === undefined) this.#registry.deleteEndpoint(tenantId, id);
    else this.#registry.put(entry.endpoint);
  }
}

function keyOf(tenantId: string, id: string): string {
  return `${tenantId}/${id}`;
}

function splitKey(key: string): [string, string] {
  const slash = key.indexOf("/");
  return [key.slice(0, slash), key.slice(slash + 1)];
}

/** What the file says of an endpoint, as a digest: a change in the file changes it. */
function fileDigest(endpoint: Endpoint): string {
  return sha256Hex(JSON.stringify([
    endpoint.url,
    endpoint.events.patterns,
    endpoint.secrets[0]?.secret ?? null,
    endpoint.publicKeyPem ?? null,
    endpoint.rateLimitPerSecond ?? null,
    endpoint.enabled,
  ]));
}

/** The stored form of an endpoint's entry (JSON, snake case, version 1). */
interface StoredEntry {
  readonly v: 1;
  readonly origin: EndpointOrigin;
  readonly file: string | null;
  readonly endpoint: {
    readonly url: string;
    readonly events: readonly string[];
    readonly secrets: readonly { readonly secret: string; readonly expires_at: number | null }[];
    readonly public_key: string | null;
    readonly rate_limit_per_second: number | null;
    readonly enabled: boolean;
    readonly disabled_reason: string | null;
    readonly created_at: number;
    readonly updated_at: number;
  } | null;
}

/**
 * An entry as the store keeps it. The signing secrets are stored as they
 * are (deliveries are signed with them): the backend is as secret as they are.
 */
function encodeEntry(entry: EndpointEntry): string {
  const endpoint = entry.endpoint;
  const stored: StoredEntry = {
    v: 1,
    origin: entry.origin,
    file: entry.file,
    endpoint: endpoint === undefined ? null : {
      url: endpoint.url,
      events: endpoint.events.patterns,
      secrets: endpoint.secrets.map((secret) => ({
        secret: secret.secret,
        expires_at: secret.expiresAt,
      })),
      public_key: endpoint.publicKeyPem ?? null,
      rate_limit_per_second: endpoint.rateLimitPerSecond ?? null,
      enabled: endpoint.enabled,
      disabled_reason: endpoint.disabledReason,
      created_at: endpoint.createdAt,
      updated_at: endpoint.updatedAt,
    },
  };
  return JSON.stringify(stored);
}

/** @throws {TypeError} naming the key when the value is not an entry this version wrote */
function decodeEntry(key: string, value: string): EndpointEntry {
  const [tenantId, id] = splitKey(key);
  try {
    const stored = JSON.parse(value) as StoredEntry;
    if (stored.v !== 1 || (stored.origin !== "file" && stored.origin !== "api")) {
      throw new Error(`version ${String(stored.v)}, origin ${String(stored.origin)}`);
    }
    const fields = stored.endpoint;
    if (fields === null) return { origin: stored.origin, file: stored.file, endpoint: undefined };
    return {
      origin: stored.origin,
      file: stored.file,
      endpoint: {
        id,
        tenantId,
        url: fields.url,
        events: compileEventPatterns(fields.events),
        secrets: fields.secrets.map((secret) => ({
          secret: secret.secret,
          key: parseWebhookSecret(secret.secret),
          expiresAt: secret.expires_at,
        })),
        publicKeyPem: fields.public_key ?? undefined,
        publicKey: fields.public_key === null ? undefined : parseRsaKey(fields.public_key),
        rateLimitPerSecond: fields.rate_limit_per_second ?? undefined,
        enabled: fields.enabled,
        disabledReason: fields.disabled_reason,
        createdAt: fields.created_at,
        updatedAt: fields.updated_at,
      },
    };
  } catch (error) {
    throw new TypeError(`Cannot read the stored endpoint ${key}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

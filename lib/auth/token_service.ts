import { timingSafeEqual, uuidV4 } from "../crypto/mod.ts";
import { type Client, GRANT_TYPES, type GrantType } from "./clients.ts";
import { AuthError } from "./errors.ts";
import type { LoginLimiter } from "./types.ts";
import { prepareUsername, usernameKey } from "./names.ts";
import { hashPassword, verifyPassword } from "./password_hash.ts";
import { newToken, tokenHash } from "./tokens.ts";
import type { AuthStore, UserRecord } from "./types.ts";

/** A user to register. */
export interface NewUser {
  readonly username: string;
  readonly password: string;
  readonly notifyLanguage: string | null;
}

/** Credentials from an `Authorization: Basic` header, already form-url-decoded. */
export interface BasicCredentials {
  readonly id: string;
  readonly secret: string;
}

/** A token, revocation or introspection request, parsed. */
export interface TokenRequest {
  /** Parameters, each at most once; parameters sent without a value are absent. */
  readonly params: ReadonlyMap<string, string>;
  readonly basic: BasicCredentials | undefined;
  /** The client's network address, for login throttling. */
  readonly address: string;
}

/** A successful token response (RFC 6749 §5.1). */
export interface TokenResponse {
  readonly access_token: string;
  readonly token_type: "Bearer";
  readonly expires_in: number;
  readonly scope: string;
  readonly refresh_token?: string;
}

/** What a valid access token grants. */
export interface AccessGrant {
  readonly clientId: string;
  readonly userId: string | null;
  readonly scope: readonly string[];
  readonly expiresAt: number;
}

/** An introspection response (RFC 7662 §2.2). */
export type IntrospectionResponse =
  | { readonly active: false }
  | {
    readonly active: true;
    readonly scope: string;
    readonly client_id: string;
    readonly token_type?: "Bearer";
    readonly exp: number;
    readonly iat: number;
    readonly sub?: string;
    readonly username?: string;
  };

/** Options of {@linkcode TokenService}. */
export interface TokenServiceOptions {
  readonly store: AuthStore;
  readonly clients: readonly Client[];
  /** Clock in epoch milliseconds. */
  readonly now: () => number;
  /** Random bytes (tokens, ids). */
  readonly random: (size: number) => Uint8Array;
  /**
   * Counts failed logins and client authentications, in memory
   * (`LoginThrottle`) or shared (`PostgresLoginThrottle`).
   */
  readonly throttle: LoginLimiter;
  /**
   * Writes a new user, with whatever else an account is made of, in one
   * write where the stores allow it (the app writes the user's sync context
   * with it, in one transaction on PostgreSQL).
   * @returns whether the user was added (false: the name is taken)
   * @default the store's `createUser`
   */
  readonly register?: (user: UserRecord) => Promise<boolean>;
  /**
   * Access-token lifetime.
   * @default {3600}
   */
  readonly accessTtlSeconds?: number;
  /**
   * Refresh-token lifetime, renewed by each rotation.
   * @default {2592000}
   */
  readonly refreshTtlSeconds?: number;
  /**
   * Seconds after a refresh token's rotation during which presenting it
   * again (a retry after a lost response) gives a new pair of the same
   * login instead of revoking it; 0 makes every reuse revoke.
   * @default {30}
   */
  readonly refreshReuseIntervalSeconds?: number;
  /**
   * scrypt cost of new passwords, and of the decoy hash checked for unknown
   * users so that a missing user takes as long as a wrong password.
   * @default {16384}
   */
  readonly passwordCost?: number;
}

/**
 * The rules of the token endpoint (RFC 6749), revocation (RFC 7009) and
 * introspection (RFC 7662): client authentication by HTTP Basic or body
 * fields (never both), the `client_credentials`, `password` and
 * `refresh_token` grants, scope checks, opaque 256-bit tokens stored only as
 * SHA-256, and refresh-token rotation with reuse detection that revokes the
 * whole family (RFC 9700 §4.14.2).
 * @example
 * ```ts
 * const tokens = new TokenService({
 *   store: new MemoryAuthStore(),
 *   clients: parseClients([{ client_id: "backend", client_secret: "s3cret", grant_types: ["client_credentials"], scopes: ["SignUp"] }]),
 *   now: Date.now,
 *   random: pooledRandom(),
 *   throttle: new LoginThrottle({ now: Date.now }),
 * });
 * const params = new Map([["grant_type", "client_credentials"], ["client_id", "backend"], ["client_secret", "s3cret"]]);
 * const { access_token } = await tokens.token({ params, basic: undefined, address: "127.0.0.1" });
 * ```
 */
export class TokenService {
  readonly #store: AuthStore;
  readonly #register: (user: UserRecord) => Promise<boolean>;
  readonly #clients: ReadonlyMap<string, Client>;
  /** Secrets that matched lately, to their clients (at most {@linkcode MAX_VERIFIED}). */
  readonly #verified = new Map<string, Client>();
  readonly #now: () => number;
  readonly #random: (size: number) => Uint8Array;
  readonly #throttle: LoginLimiter;
  readonly #accessTtl: number;
  readonly #refreshTtl: number;
  readonly #reuseInterval: number;
  readonly #passwordCost: number;
  #decoy: Promise<string> | undefined;

  /**
   * Creates the service.
   * @param options store, clients, clock, randomness, throttle, lifetimes
   */
  constructor(options: TokenServiceOptions) {
    this.#store = options.store;
    this.#register = options.register ?? ((user) => options.store.createUser(user));
    this.#clients = new Map(options.clients.map((client) => [client.id, client]));
    this.#now = options.now;
    this.#random = options.random;
    this.#throttle = options.throttle;
    this.#accessTtl = options.accessTtlSeconds ?? 3600;
    this.#refreshTtl = options.refreshTtlSeconds ?? 30 * 24 * 3600;
    this.#reuseInterval = (options.refreshReuseIntervalSeconds ?? 30) * 1000;
    this.#passwordCost = options.passwordCost ?? 16_384;
  }

  /**
   * Answers a token request.
   * @param request the parsed request
   * @returns the token response
   * @throws {AuthError} with the RFC 6749 §5.2 code
   */
  async token(request: TokenRequest): Promise<TokenResponse> {
    const client = await this.authenticateClient(request);
    const grant = request.params.get("grant_type");
    if (grant === undefined) throw invalidRequest("Missing grant_type");
    if (!(GRANT_TYPES as readonly string[]).includes(grant)) {
      throw new AuthError(
        "ERR_AUTH_UNSUPPORTED_GRANT_TYPE",
        `Grant type ${quote(grant)} is not supported`,
      );
    }
    if (!client.grantTypes.has(grant as GrantType)) {
      throw new AuthError("ERR_AUTH_UNAUTHORIZED_CLIENT", `Client may not use the ${grant} grant`);
    }
    switch (grant as GrantType) {
      case "client_credentials": {
        const scope = resolveScope(request.params.get("scope"), client.scopes);
        const access = await this.#issue("access", client.id, null, scope, null);
        return {
          access_token: access,
          token_type: "Bearer",
          expires_in: this.#accessTtl,
          scope: scope.join(" "),
        };
      }
      case "password":
        return this.#password(request, client);
      case "refresh_token":
        return this.#refresh(request, client);
    }
  }

  /**
   * Revokes a token the client holds (RFC 7009): an access token alone, a
   * refresh token with its whole family. An unknown token is ignored, as the
   * RFC asks; another client's token is refused and the client told
   * (RFC 7009 §2.1), and stays valid.
   * @param request the parsed request
   * @throws {AuthError} for a bad client or a missing token, and
   * `ERR_AUTH_UNAUTHORIZED_CLIENT` for another client's token
   */
  async revoke(request: TokenRequest): Promise<void> {
    const client = await this.authenticateClient(request);
    const token = request.params.get("token");
    if (token === undefined) throw invalidRequest("Missing token");
    const record = await this.#store.token(tokenHash(token));
    if (record === undefined) return;
    if (record.clientId !== client.id) {
      throw new AuthError(
        "ERR_AUTH_UNAUTHORIZED_CLIENT",
        "The token was issued to another client: only that client may revoke it",
      );
    }
    if (record.familyId !== null && record.kind === "refresh") {
      await this.#store.revokeFamily(record.familyId);
    }
    await this.#store.deleteToken(record.hash);
  }

  /**
   * Describes a token to a confidential client (RFC 7662): to the client it
   * was issued to, or to a client with the `introspect` permission. An
   * unknown, expired, rotated or revoked token, or another client's token
   * asked about without that permission, is `{active: false}`, without saying why.
   * @param request the parsed request
   * @returns the introspection response
   * @throws {AuthError} for a public or bad client, or a missing token
   */
  async introspect(request: TokenRequest): Promise<IntrospectionResponse> {
    const client = await this.authenticateClient(request);
    if (client.secretHash === undefined) {
      throw basicChallenge(
        "Only confidential clients may introspect tokens: authenticate with client_secret_basic",
      );
    }
    const token = request.params.get("token");
    if (token === undefined) throw invalidRequest("Missing token");
    const record = await this.#store.liveToken(tokenHash(token), this.#now());
    if (
      record === undefined ||
      (record.clientId !== client.id && !client.permissions.has("introspect"))
    ) return { active: false };
    const user = record.userId === null ? undefined : await this.#store.userById(record.userId);
    return {
      active: true,
      scope: record.scope.join(" "),
      client_id: record.clientId,
      ...(record.kind === "access" ? { token_type: "Bearer" as const } : {}),
      exp: Math.floor(record.expiresAt / 1000),
      iat: Math.floor(record.issuedAt / 1000),
      ...(user === undefined ? {} : { sub: user.uuid, username: user.username }),
    };
  }

  /**
   * Checks an access token.
   * @param token the bearer token
   * @returns what it grants, or undefined when it is unknown, expired or revoked
   */
  async verifyAccess(token: string): Promise<AccessGrant | undefined> {
    const record = await this.#store.liveToken(tokenHash(token), this.#now());
    if (record === undefined || record.kind !== "access") return undefined;
    return {
      clientId: record.clientId,
      userId: record.userId,
      scope: record.scope,
      expiresAt: record.expiresAt,
    };
  }

  /**
   * Authenticates the client of a request: HTTP Basic, or `client_id` (and
   * `client_secret` for a confidential client) in the body, never both.
   * Every attempt that presents a secret goes through the throttle, as a
   * password does: per client id from one address, per client id from
   * addresses it has not authenticated from lately, and per address.
   * @param request the parsed request
   * @returns the client
   * @throws {AuthError} `ERR_AUTH_INVALID_REQUEST` for two methods or mismatched ids,
   * `ERR_AUTH_THROTTLED` (429 with `Retry-After`) past the throttle's limits,
   * `ERR_AUTH_INVALID_CLIENT` (401 with a Basic challenge) when Basic was used,
   * `ERR_AUTH_INVALID_CLIENT_CREDENTIALS` (400) otherwise
   */
  async authenticateClient(request: TokenRequest): Promise<Client> {
    const bodyId = request.params.get("client_id");
    const bodySecret = request.params.get("client_secret");
    if (request.basic !== undefined) {
      if (bodySecret !== undefined) {
        throw invalidRequest("Use one client authentication method, not Basic and client_secret");
      }
      if (bodyId !== undefined && bodyId !== request.basic.id) {
        throw invalidRequest("client_id differs from the Basic credentials");
      }
      const client = await this.#checkSecret(
        request.basic.id,
        request.basic.secret,
        request.address,
      );
      if (client === undefined) throw basicChallenge("Client authentication failed");
      return client;
    }
    // Without HTTP authentication there is no scheme to challenge: 400, as RFC 6749 §5.2 allows.
    if (bodyId === undefined) throw bodyRejected("Client authentication failed: no client_id");
    if (bodySecret !== undefined) {
      const named = this.#clients.get(bodyId);
      if (named !== undefined && named.secretHash === undefined) {
        throw bodyRejected("Client authentication failed: a public client has no secret");
      }
      const client = await this.#checkSecret(bodyId, bodySecret, request.address);
      if (client === undefined) throw bodyRejected("Client authentication failed");
      return client;
    }
    // No secret, nothing to guess: a public client, or a refusal.
    const client = this.#clients.get(bodyId);
    if (client === undefined || client.secretHash !== undefined) {
      throw bodyRejected("Client authentication failed");
    }
    return client;
  }

  /**
   * Registers a user, hashing the password with scrypt at the configured cost.
   * @param user the name (prepared, unique by its `usernameKey`), the password (prepared: NFKC) and the notification language
   * @returns the user, or undefined when the name is taken
   */
  async createUser(user: NewUser): Promise<UserRecord | undefined> {
    const passwordHash = await hashPassword(user.password, {
      cost: this.#passwordCost,
      salt: this.#random(16),
    });
    const record: UserRecord = {
      uuid: uuidV4(this.#random),
      username: user.username,
      passwordHash,
      notifyLanguage: user.notifyLanguage,
      createdAt: this.#now(),
    };
    return (await this.#register(record)) ? record : undefined;
  }

  /**
   * Deletes a user's account on the token side: the user, and with it every
   * token issued for the user (access and refresh, every login).
   * @param uuid the user's uuid
   */
  deleteUser(uuid: string): Promise<void> {
    return this.#store.deleteUser(uuid);
  }

  async #password(request: TokenRequest, client: Client): Promise<TokenResponse> {
    const typed = request.params.get("username");
    const password = request.params.get("password");
    if (typed === undefined) throw invalidRequest("Missing username");
    if (password === undefined) throw invalidRequest("Missing password");
    const scope = resolveScope(request.params.get("scope"), client.scopes);
    // A name no one can sign up with cannot exist: refused without a lookup,
    // a password check, or a place in the throttle's memory. So is a password
    // far longer than any sign-up accepted.
    const name = prepareUsername(typed);
    if (name === undefined || password.length > MAX_PRESENTED_PASSWORD) {
      throw new AuthError("ERR_AUTH_INVALID_GRANT", "Wrong user name or password");
    }
    const subject = { kind: "user", name: usernameKey(name) } as const;
    const wait = await this.#throttle.start(subject, request.address);
    if (wait > 0) throw throttled(`Too many failed logins; retry after ${wait} s`, wait);
    const user = await this.#store.userByName(subject.name);
    const ok = user === undefined
      ? (await verifyPassword(password.normalize("NFKC"), await this.#decoyHash()), false)
      : await passwordMatches(password, user.passwordHash);
    if (!ok || user === undefined) {
      throw new AuthError("ERR_AUTH_INVALID_GRANT", "Wrong user name or password");
    }
    await this.#throttle.succeed(subject, request.address);
    const family = uuidV4(this.#random);
    const access = await this.#issue("access", client.id, user.uuid, scope, family);
    const refresh = await this.#issue("refresh", client.id, user.uuid, scope, family);
    return {
      access_token: access,
      token_type: "Bearer",
      expires_in: this.#accessTtl,
      scope: scope.join(" "),
      refresh_token: refresh,
    };
  }

  async #refresh(request: TokenRequest, client: Client): Promise<TokenResponse> {
    const presented = request.params.get("refresh_token");
    if (presented === undefined) throw invalidRequest("Missing refresh_token");
    const record = await this.#store.token(tokenHash(presented));
    const now = this.#now();
    if (
      record === undefined || record.kind !== "refresh" || record.expiresAt <= now ||
      record.familyId === null
    ) {
      throw new AuthError("ERR_AUTH_INVALID_GRANT", "Refresh token is invalid or expired");
    }
    if (record.clientId !== client.id) {
      throw new AuthError("ERR_AUTH_INVALID_GRANT", "Refresh token was issued to another client");
    }
    if (await this.#store.isFamilyRevoked(record.familyId)) {
      throw new AuthError("ERR_AUTH_INVALID_GRANT", "Refresh token was revoked");
    }
    // Rotation: each refresh token serves once. Presented again within the
    // reuse interval, it is a retry after a lost response: a new pair of the
    // same login. Later, it means the token leaked, so the whole family (one
    // login) is revoked, the newest included.
    if (record.rotatedAt !== null && now - record.rotatedAt > this.#reuseInterval) {
      await this.#store.revokeFamily(record.familyId);
      throw new AuthError(
        "ERR_AUTH_INVALID_GRANT",
        "Refresh token was already used; the session is revoked",
      );
    }
    // Everything that can refuse the request is checked before the token is spent.
    const requested = request.params.get("scope");
    const scope = requested === undefined ? record.scope : resolveScope(requested, record.scope);
    if (record.userId === null || (await this.#store.userById(record.userId)) === undefined) {
      throw new AuthError("ERR_AUTH_INVALID_GRANT", "Refresh token's user no longer exists");
    }
    // Another request that spent it in the meantime did so just now: within the interval, like a retry.
    if (
      record.rotatedAt === null && !(await this.#store.rotate(record.hash, now)) &&
      this.#reuseInterval === 0
    ) {
      await this.#store.revokeFamily(record.familyId);
      throw new AuthError(
        "ERR_AUTH_INVALID_GRANT",
        "Refresh token was already used; the session is revoked",
      );
    }
    const access = await this.#issue("access", client.id, record.userId, scope, record.familyId);
    const refresh = await this.#issue(
      "refresh",
      client.id,
      record.userId,
      record.scope,
      record.familyId,
    );
    return {
      access_token: access,
      token_type: "Bearer",
      expires_in: this.#accessTtl,
      scope: scope.join(" "),
      refresh_token: refresh,
    };
  }

  async #issue(
    kind: "access" | "refresh",
    clientId: string,
    userId: string | null,
    scope: readonly string[],
    familyId: string | null,
  ): Promise<string> {
    const token = newToken(this.#random);
    const now = this.#now();
    const ttl = kind === "access" ? this.#accessTtl : this.#refreshTtl;
    await this.#store.putToken({
      hash: tokenHash(token),
      kind,
      clientId,
      userId,
      scope,
      issuedAt: now,
      expiresAt: now + ttl * 1000,
      familyId,
      rotatedAt: null,
    });
    return token;
  }

  /**
   * Checks a client's secret through the throttle: the client, or undefined
   * for an unknown client id, a public client or a wrong secret.
   */
  /**
   * Whether a secret is the client's: a secret that matched lately is found by
   * one lookup (as a Map finds it, by its hash, never by comparing it character
   * by character), so a back end's every grant does not hash its secret again.
   */
  #matches(client: Client, secret: string): boolean {
    if (this.#verified.get(secret) === client) return true;
    if (!matches(client, secret)) return false;
    if (this.#verified.size >= MAX_VERIFIED) this.#verified.clear();
    this.#verified.set(secret, client);
    return true;
  }

  async #checkSecret(id: string, secret: string, address: string): Promise<Client | undefined> {
    const subject = { kind: "client", name: id } as const;
    const client = this.#clients.get(id);
    // The hash is compared at once, so only a wrong secret is counted: a back end sending many
    // requests at once (which a password's slow check would count from their start) is not slowed.
    if (client !== undefined && this.#matches(client, secret)) {
      const wait = await this.#throttle.check(subject, address);
      if (wait > 0) {
        throw throttled(`Too many failed client authentications; retry after ${wait} s`, wait);
      }
      await this.#throttle.succeed(subject, address, { counted: false });
      return client;
    }
    const wait = await this.#throttle.start(subject, address);
    if (wait > 0) {
      throw throttled(`Too many failed client authentications; retry after ${wait} s`, wait);
    }
    return undefined;
  }

  #decoyHash(): Promise<string> {
    this.#decoy ??= hashPassword("decoy", { cost: this.#passwordCost, salt: this.#random(16) });
    return this.#decoy;
  }
}

/**
 * The scopes granted for a request: the requested ones if all are allowed,
 * else all allowed when none were requested (RFC 6749 §3.3).
 * @param requested the `scope` parameter, space-delimited
 * @param allowed what the client (or the refresh token) may have
 * @returns the granted scopes
 * @throws {AuthError} `ERR_AUTH_INVALID_SCOPE` for a scope that is not allowed
 */
export function resolveScope(
  requested: string | undefined,
  allowed: readonly string[],
): readonly string[] {
  if (requested === undefined) return allowed;
  const wanted = [...new Set(requested.split(" ").filter((part) => part !== ""))];
  if (wanted.length === 0) return allowed;
  for (const scope of wanted) {
    if (!allowed.includes(scope)) {
      throw new AuthError(
        "ERR_AUTH_INVALID_SCOPE",
        `Scope ${quote(scope)} is not allowed; allowed: ${allowed.join(" ")}`,
      );
    }
  }
  return wanted;
}

/** UTF-16 units of a password past which a login is refused unread: no sign-up ever accepted one so long. */
const MAX_PRESENTED_PASSWORD = 1024;

/**
 * Checks a password typed at login: its NFKC form, as sign-up hashes it;
 * else, when that differs, the form hashed before passwords were NFKC'd (NFC).
 */
async function passwordMatches(password: string, hash: string): Promise<boolean> {
  const prepared = password.normalize("NFKC");
  if (await verifyPassword(prepared, hash)) return true;
  // Hashes made before were of the password as typed, which scrypt NFC-normalizes: that form, when it differs.
  return prepared !== password.normalize("NFC") && verifyPassword(password, hash);
}

/** How many secrets that matched are remembered; past it, the memory starts again. */
const MAX_VERIFIED = 1024;

function matches(client: Client, secret: string): boolean {
  return client.secretHash !== undefined && timingSafeEqual(tokenHash(secret), client.secretHash);
}

/** invalid_client after HTTP Basic: 401 with the challenge RFC 6749 §5.2 and RFC 9110 §15.5.2 require. */
function basicChallenge(message: string): AuthError {
  return new AuthError("ERR_AUTH_INVALID_CLIENT", message, {
    challenge: 'Basic realm="tributary", charset="UTF-8"',
  });
}

/** Too many failures: 429 with the seconds to wait. */
function throttled(message: string, wait: number): AuthError {
  return new AuthError("ERR_AUTH_THROTTLED", message, { retryAfterMs: wait * 1000 });
}

/** invalid_client after authentication in the body. */
function bodyRejected(message: string): AuthError {
  return new AuthError("ERR_AUTH_INVALID_CLIENT_CREDENTIALS", message);
}

function invalidRequest(message: string): AuthError {
  return new AuthError("ERR_AUTH_INVALID_REQUEST", message);
}

/** Quotes request text for an error_description, keeping only the characters RFC 6749 allows there. */
function quote(text: string): string {
  return `'${text.slice(0, 64).replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "?")}'`;
}

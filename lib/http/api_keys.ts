import { sha256Hex } from "../crypto/mod.ts";
import { HttpError } from "./errors.ts";
import type { HttpRequest } from "./types.ts";

/** A configured API key: a name for logs and limits, and the key's SHA-256. */
export interface ApiKey {
  readonly name: string;
  readonly hash: string;
}

const HASHED = /^sha256:([0-9a-fA-F]{64})$/;

/**
 * Reads one configured key, given plainly or as `sha256:<64 hex digits>`.
 * Only the hash is kept.
 * @param name the key's name
 * @param entry the plain key or its `sha256:` form
 * @returns the key record
 * @throws {RangeError} when the entry is empty, or `sha256:` is not followed by 64 hex digits
 */
export function parseApiKey(name: string, entry: string): ApiKey {
  const text = entry.trim();
  if (text === "") throw new RangeError(`Cannot read API key "${name}": it is empty`);
  if (text.startsWith("sha256:")) {
    const match = HASHED.exec(text);
    if (match === null) {
      throw new RangeError(
        `Cannot read API key "${name}": "sha256:" must be followed by 64 hex digits`,
      );
    }
    return { name, hash: match[1]!.toLowerCase() };
  }
  return { name, hash: sha256Hex(text) };
}

/** A request's authenticated caller. */
export interface Identity {
  /** `key` for an API key, `origin` for a keyless browser request from an allowed origin. */
  readonly kind: "key" | "origin";
  /** The key's name or the origin; what rate limits count against. */
  readonly id: string;
}

/** Options of {@linkcode authenticateApiKey}. */
export interface AuthenticateOptions {
  /** Accepted keys, by hash. */
  readonly keys: ReadonlyMap<string, ApiKey>;
  /**
   * Origins whose browser `GET` requests may omit the key.
   * @default {[]}
   */
  readonly keylessOrigins?: ReadonlySet<string>;
  /**
   * Header that carries the key.
   * @default {"x-api-key"}
   */
  readonly header?: string;
}

/**
 * Presented keys already found valid, per key index: hashing costs more than
 * the rest of authentication. Only valid keys are remembered, so callers
 * sending random keys cannot grow it; it is bounded all the same.
 */
const known = new WeakMap<ReadonlyMap<string, ApiKey>, Map<string, Identity>>();
const MAX_KNOWN = 4096;

/** The identity of a presented key (one frozen record per key, made once), or undefined for no valid key. */
function lookUp(keys: ReadonlyMap<string, ApiKey>, presented: string): Identity | undefined {
  let valid = known.get(keys);
  if (valid === undefined) {
    valid = new Map();
    known.set(keys, valid);
  }
  const remembered = valid.get(presented);
  if (remembered !== undefined) return remembered;
  const key = keys.get(sha256Hex(presented));
  if (key === undefined) return undefined;
  const identity: Identity = Object.freeze({ kind: "key", id: key.name });
  if (valid.size >= MAX_KNOWN) valid.clear();
  valid.set(presented, identity);
  return identity;
}

/** The identities of keyless origins, one frozen record each (origins come from an allow-list). */
const originIdentities = new Map<string, Identity>();

function originIdentity(origin: string): Identity {
  let identity = originIdentities.get(origin);
  if (identity === undefined) {
    identity = Object.freeze({ kind: "origin", id: origin });
    if (originIdentities.size >= MAX_KNOWN) originIdentities.clear();
    originIdentities.set(origin, identity);
  }
  return identity;
}

/**
 * Indexes keys by their hash, for {@linkcode authenticateApiKey}.
 * @param keys the keys
 * @returns a map from hash to key
 */
export function indexApiKeys(keys: Iterable<ApiKey>): ReadonlyMap<string, ApiKey> {
  const index = new Map<string, ApiKey>();
  for (const key of keys) index.set(key.hash, key);
  return index;
}

/**
 * Finds the caller of a request from its API key, or from an allowed browser
 * origin for keyless `GET` and `HEAD`. The key is hashed before lookup, so
 * stored keys never need to be plain.
 * @param request the request
 * @param options keys, keyless origins and header name
 * @returns the identity
 * @throws {HttpError} `ERR_HTTP_UNAUTHORIZED` without a key, `ERR_HTTP_FORBIDDEN` for an unknown key
 */
export function authenticateApiKey(request: HttpRequest, options: AuthenticateOptions): Identity {
  // Header names are case-insensitive, and the request record holds them in lower case.
  const header = options.header === undefined ? "x-api-key" : options.header.toLowerCase();
  const presented = request.headers[header];
  if (presented === undefined || presented.trim() === "") {
    const origin = request.headers["origin"];
    const safe = request.method === "GET" || request.method === "HEAD";
    if (origin !== undefined && safe && options.keylessOrigins?.has(origin) === true) {
      return originIdentity(origin);
    }
    throw new HttpError(
      "ERR_HTTP_UNAUTHORIZED",
      `Cannot authenticate the request: send an API key in the ${header} header`,
      { target: header },
    );
  }
  const identity = lookUp(options.keys, presented.trim());
  if (identity === undefined) {
    throw new HttpError(
      "ERR_HTTP_FORBIDDEN",
      `Cannot authenticate the request: the API key in the ${header} header is not valid`,
      { target: header },
    );
  }
  return identity;
}

import { sha256Hex } from "../crypto/mod.ts";

/** Grant types the token endpoint knows. */
export const GRANT_TYPES = ["client_credentials", "password", "refresh_token"] as const;

/** A grant type. */
export type GrantType = (typeof GRANT_TYPES)[number];

/** Scopes the service knows: `SignUp` registers users, `UserActivity` acts for a user. */
export const SCOPES = ["SignUp", "UserActivity"] as const;

/** What a client may do beyond its own tokens: `introspect` any client's tokens (a resource server). */
export const PERMISSIONS = ["introspect"] as const;

/** A permission of a client. */
export type Permission = (typeof PERMISSIONS)[number];

/** A registered client. A client without a secret is public and only identifies itself. */
export interface Client {
  readonly id: string;
  /** SHA-256 (hex) of the secret; undefined for a public client. */
  readonly secretHash: string | undefined;
  readonly grantTypes: ReadonlySet<GrantType>;
  readonly scopes: readonly string[];
  /** Permissions beyond its own tokens; none by default. */
  readonly permissions: ReadonlySet<Permission>;
}

const CLIENT_FIELDS = new Set([
  "client_id",
  "client_secret",
  "grant_types",
  "scopes",
  "permissions",
]);
const HASHED = /^sha256:([0-9a-fA-F]{64})$/;
const CLIENT_ID = /^[\x21-\x7e]{1,128}$/;

/**
 * Reads registered clients from parsed JSON: an array of
 * `{"client_id", "client_secret"?, "grant_types", "scopes", "permissions"?}`, a secret plain or
 * `sha256:<64 hex digits>`; a client without a secret is public. The one
 * permission, `introspect`, lets a confidential client introspect any client's tokens.
 * @param value the parsed file
 * @returns the clients
 * @throws {TypeError} naming the entry and field at fault
 * @example
 * ```ts
 * parseClients([{ client_id: "app", grant_types: ["password", "refresh_token"], scopes: ["UserActivity"] }]);
 * ```
 */
export function parseClients(value: unknown): Client[] {
  if (!Array.isArray(value)) {
    throw new TypeError("Cannot read clients: expected a JSON array of clients");
  }
  const seen = new Set<string>();
  return value.map((entry: unknown, i) => {
    const where = `client ${i + 1}`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new TypeError(`Cannot read ${where}: expected an object`);
    }
    const record = entry as Record<string, unknown>;
    for (const field of Object.keys(record)) {
      if (!CLIENT_FIELDS.has(field)) {
        throw new TypeError(
          `Cannot read ${where}: "${field}" is unknown; a client has ${
            [...CLIENT_FIELDS].join(", ")
          }`,
        );
      }
    }
    const id = record["client_id"];
    if (typeof id !== "string" || !CLIENT_ID.test(id)) {
      throw new TypeError(
        `Cannot read ${where}: "client_id" must be 1 to 128 printable characters`,
      );
    }
    if (seen.has(id)) throw new TypeError(`Cannot read ${where}: client_id "${id}" is used twice`);
    seen.add(id);
    const secret = record["client_secret"];
    let secretHash: string | undefined;
    if (secret !== undefined && secret !== null) {
      if (typeof secret !== "string" || secret.trim() === "") {
        throw new TypeError(
          `Cannot read ${where} (${id}): "client_secret" must be a non-empty string`,
        );
      }
      const match = HASHED.exec(secret.trim());
      if (secret.trim().startsWith("sha256:") && match === null) {
        throw new TypeError(
          `Cannot read ${where} (${id}): "sha256:" must be followed by 64 hex digits`,
        );
      }
      secretHash = match === null ? sha256Hex(secret) : match[1]!.toLowerCase();
    }
    const grants = record["grant_types"];
    if (!Array.isArray(grants) || grants.length === 0 || !grants.every(isGrantType)) {
      throw new TypeError(
        `Cannot read ${where} (${id}): "grant_types" must list some of ${GRANT_TYPES.join(", ")}`,
      );
    }
    if (grants.includes("client_credentials") && secretHash === undefined) {
      throw new TypeError(`Cannot read ${where} (${id}): client_credentials needs a client_secret`);
    }
    const scopes = record["scopes"];
    if (
      !Array.isArray(scopes) ||
      !scopes.every((s) => typeof s === "string" && (SCOPES as readonly string[]).includes(s))
    ) {
      throw new TypeError(
        `Cannot read ${where} (${id}): "scopes" must list some of ${SCOPES.join(", ")}`,
      );
    }
    const permissions = record["permissions"] ?? [];
    if (!Array.isArray(permissions) || !permissions.every(isPermission)) {
      throw new TypeError(
        `Cannot read ${where} (${id}): "permissions" must list some of ${PERMISSIONS.join(", ")}`,
      );
    }
    if (permissions.length > 0 && secretHash === undefined) {
      throw new TypeError(
        `Cannot read ${where} (${id}): the introspect permission needs a client_secret (only confidential clients introspect)`,
      );
    }
    return {
      id,
      secretHash,
      grantTypes: new Set(grants),
      scopes: [...new Set(scopes as string[])],
      permissions: new Set(permissions),
    };
  });
}

function isPermission(value: unknown): value is Permission {
  return typeof value === "string" && (PERMISSIONS as readonly string[]).includes(value);
}

function isGrantType(value: unknown): value is GrantType {
  return typeof value === "string" && (GRANT_TYPES as readonly string[]).includes(value);
}

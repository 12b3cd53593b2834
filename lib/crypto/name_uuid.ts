import { createHash } from "node:crypto";

/** The RFC 9562 namespace for URLs, used when no namespace is given. */
export const URL_NAMESPACE = "6ba7b811-9dad-11d1-80b4-00c04fd430c8";

const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Options of {@linkcode nameUuid}. */
export interface NameUuidOptions {
  /**
   * Namespace UUID the name lives in.
   * @default {URL_NAMESPACE}
   */
  namespace?: string;
}

/**
 * Derives a name-based UUID (RFC 9562 version 5, SHA-1) from a name, so the
 * same name always yields the same id.
 * @param name the name, e.g. a DOI URL
 * @param options namespace
 * @returns a lower-case UUID string
 * @throws {TypeError} when the namespace is not a UUID
 * @example
 * ```ts
 * nameUuid("https://doi.org/10.25976/abcd-ef12"); // "…-5…-…"
 * ```
 */
export function nameUuid(name: string, options: NameUuidOptions = {}): string {
  const namespace = options.namespace ?? URL_NAMESPACE;
  if (!UUID_PATTERN.test(namespace)) {
    throw new TypeError(`Cannot derive a UUID: namespace "${namespace}" is not a UUID`);
  }
  const hash = createHash("sha1")
    .update(Buffer.from(namespace.replaceAll("-", ""), "hex"))
    .update(name, "utf8")
    .digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString("hex");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${
    hex.slice(20)
  }`;
}

/**
 * Tells whether text is a UUID in the 8-4-4-4-12 hex form.
 * @param text candidate
 * @returns whether it is a UUID
 */
export function isUuid(text: string): boolean {
  return UUID_PATTERN.test(text);
}

import { encodeBase64Url } from "../crypto/_internal.ts";
import { sha256Hex } from "../crypto/mod.ts";

/**
 * Makes an opaque token: 256 random bits as 43 base64url characters.
 * @param random gives cryptographically secure random bytes
 * @returns the token
 */
export function newToken(random: (size: number) => Uint8Array): string {
  return encodeBase64Url(random(32));
}

/**
 * The SHA-256 (hex) under which a token is stored; the token itself never is.
 * @param token the token
 * @returns its hash
 */
export function tokenHash(token: string): string {
  return sha256Hex(token);
}

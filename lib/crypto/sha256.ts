import { createHash } from "node:crypto";

/**
 * Hashes text or bytes with SHA-256.
 * @param input UTF-8 text or raw bytes
 * @returns the digest as 64 lower-case hex digits
 */
export function sha256Hex(input: string | Uint8Array): string {
  return createHash("sha256").update(input).digest("hex");
}

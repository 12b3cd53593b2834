import { hash } from "node:crypto";

/**
 * Hashes text or bytes with SHA-256.
 * @param input UTF-8 text or raw bytes
 * @returns the digest as 64 lower-case hex digits
 */
export function sha256Hex(input: string | Uint8Array): string {
  // The one-shot hash skips the Hash object: about twice as fast for short input.
  return hash("sha256", input, "hex");
}

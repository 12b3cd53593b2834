import { hash, timingSafeEqual as equalBuffers } from "node:crypto";

/**
 * Compares two strings in constant time with `node:crypto`'s
 * `timingSafeEqual`, over their SHA-256 digests: the digests have equal
 * lengths whatever the inputs, so neither a length nor the place of a first
 * difference shows in the time taken, and equal digests mean equal strings.
 * @param a first string (a secret, a hash, a signature)
 * @param b second string
 * @returns whether the strings are equal
 */
export function timingSafeEqual(a: string, b: string): boolean {
  // As UTF-16 code units, so that strings with different lone surrogates do not hash alike (UTF-8 makes both U+FFFD).
  return bytesEqual(Buffer.from(a, "utf16le"), Buffer.from(b, "utf16le"));
}

/**
 * Compares two byte arrays in constant time, as {@linkcode timingSafeEqual}
 * does strings (over their SHA-256 digests).
 * @param a first bytes
 * @param b second bytes
 * @returns whether they are equal
 */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return equalBuffers(hash("sha256", a, "buffer"), hash("sha256", b, "buffer"));
}

/**
 * Compares two strings in time that depends only on their lengths: every
 * code unit is compared, whatever the first difference.
 * @param a first string
 * @param b second string
 * @returns whether the strings are equal
 */
export function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/**
 * Compares two byte arrays in time that depends only on their lengths.
 * @param a first bytes
 * @param b second bytes
 * @returns whether they are equal
 */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!;
  return difference === 0;
}

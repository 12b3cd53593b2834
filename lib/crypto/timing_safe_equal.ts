import { timingSafeEqual as nodeTimingSafeEqual } from "node:crypto";

const encoder = new TextEncoder();

/**
 * Compares two strings in time that depends only on their lengths.
 * @param a first string
 * @param b second string
 * @returns whether the strings are equal
 */
export function timingSafeEqual(a: string, b: string): boolean {
  const left = encoder.encode(a);
  const right = encoder.encode(b);
  if (left.length !== right.length) return false;
  return nodeTimingSafeEqual(left, right);
}

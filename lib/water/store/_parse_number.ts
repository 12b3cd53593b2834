const POW10 = [
  1,
  1e1,
  1e2,
  1e3,
  1e4,
  1e5,
  1e6,
  1e7,
  1e8,
  1e9,
  1e10,
  1e11,
  1e12,
  1e13,
  1e14,
  1e15,
  1e16,
  1e17,
  1e18,
  1e19,
  1e20,
  1e21,
  1e22,
];
const NUMBER_TEXT = /^[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

/**
 * Parses a decimal number from ASCII bytes without making a string. Up to 15
 * significant digits and 22 decimals take an exact fast path (an integer
 * divided by a power of ten, both exact, is correctly rounded); anything else
 * goes through `Number()`. Spaces around the number are allowed.
 * @param buf the bytes
 * @param from first byte
 * @param to end (exclusive)
 * @returns the number, NaN for an empty field, undefined for text that is not a number
 */
export function parseNumberBytes(buf: Uint8Array, from: number, to: number): number | undefined {
  let start = from;
  let end = to;
  while (start < end && buf[start] === 0x20) start++;
  while (end > start && buf[end - 1] === 0x20) end--;
  if (start === end) return Number.NaN;
  let i = start;
  let negative = false;
  const sign = buf[i]!;
  if (sign === 0x2d || sign === 0x2b) {
    negative = sign === 0x2d;
    i++;
  }
  let mantissa = 0;
  let digits = 0;
  let scale = 0;
  let seen = false;
  for (; i < end; i++) {
    const d = buf[i]! - 0x30;
    if (d < 0 || d > 9) break;
    mantissa = mantissa * 10 + d;
    if (mantissa !== 0) digits++;
    seen = true;
  }
  if (i < end && buf[i] === 0x2e) {
    for (i++; i < end; i++) {
      const d = buf[i]! - 0x30;
      if (d < 0 || d > 9) break;
      mantissa = mantissa * 10 + d;
      if (mantissa !== 0) digits++;
      scale++;
      seen = true;
    }
  }
  if (i === end && seen && digits <= 15 && scale <= 22) {
    const value = scale === 0 ? mantissa : mantissa / POW10[scale]!;
    return negative ? -value : value;
  }
  const text = String.fromCharCode(...buf.subarray(start, end));
  return NUMBER_TEXT.test(text) ? Number(text) : undefined;
}

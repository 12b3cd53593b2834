// Numbers written as JSON (and JavaScript's String) writes them, straight
// into bytes: whole numbers, and numbers with up to six decimals, through
// integer arithmetic; anything else through String.

/** Bytes a number can take: `-1.2345678901234567e-308` and the like. */
export const MAX_NUMBER_BYTES = 25;

/** Powers of ten that are exact doubles, up to 10^22. */
const POW10 = Array.from({ length: 23 }, (_, k) => 10 ** k);

/** Decimals the short path tries; more would be below 1e-6, which String writes with an exponent. */
const MAX_DECIMALS = 6;

/**
 * Below this, a whole number scaled by 10^k is exact and its neighbours at
 * that scale are farther apart than doubles near the number, so the digits
 * found are the only ones with k decimals that read back as the number.
 */
const EXACT = 2 ** 52;

const INT32 = 0x80000000;

/**
 * Writes a finite number as `JSON.stringify` writes it.
 *
 * A number `v` that equals `m / 10^k` for a whole `m` below 2^52 and the
 * smallest such `k` (0 to 6) is written as the digits of `m` with `k`
 * decimals: that text reads back as `v` (the division is correctly rounded,
 * as reading a decimal is), no text with fewer digits does (it would have
 * been found at a smaller `k`), and none other with as many (doubles near
 * `v` are closer together than 10^-k), so it is the shortest round trip
 * that ECMAScript's Number::toString prescribes. Others go through String.
 * @param buf where to write; at least {@linkcode MAX_NUMBER_BYTES} from `at`
 * @param at where the number starts
 * @param v a finite number
 * @returns where the number ends
 */
export function writeNumber(buf: Uint8Array, at: number, v: number): number {
  let a = v;
  // -0 is written 0, as String does: it is not below 0.
  if (a < 0) {
    buf[at++] = 0x2d;
    a = -a;
  }
  if (a < INT32 && (a | 0) === a) return writeInt(buf, at, a | 0);
  if (a < EXACT && Math.floor(a) === a) return writeWhole(buf, at, a);
  // A number with k <= 6 decimals has 6 too, found as surely while the digits are far below 2^52:
  // tried first, it spares the six tries of a number that has more (an average, say).
  const most = Math.round(a * POW10[MAX_DECIMALS]!);
  if (most >= EXACT / 4 || most / POW10[MAX_DECIMALS]! === a) {
    for (let k = 1; k <= MAX_DECIMALS; k++) {
      const p = POW10[k]!;
      const m = Math.round(a * p);
      if (m >= EXACT) break;
      if (m / p === a) return writeDecimal(buf, at, m, k);
    }
  }
  // String writes the sign of a negative number before the digits of its magnitude.
  const text = String(a);
  for (let i = 0; i < text.length; i++) buf[at++] = text.charCodeAt(i);
  return at;
}

/** Digits of `0 <= n < 2^31`. */
function intDigits(n: number): number {
  if (n < 10000) return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : 4;
  if (n < 100000000) return n < 100000 ? 5 : n < 1000000 ? 6 : n < 10000000 ? 7 : 8;
  return n < 1000000000 ? 9 : 10;
}

/**
 * Writes a whole number `0 <= n < 2^31` as digits (what {@linkcode writeNumber}
 * does for one, without taking a double).
 * @param buf where to write; at least 10 bytes from `at`
 * @param at where the number starts
 * @param n the number
 * @returns where the number ends
 */
export function writeInt(buf: Uint8Array, at: number, n: number): number {
  const end = at + intDigits(n);
  digitsBefore(buf, end, n);
  return end;
}

/** Writes the digits of a whole `0 <= n < 2^31` so that they end at `end`; returns where they start. */
function digitsBefore(buf: Uint8Array, end: number, n: number): number {
  let pos = end;
  do {
    const q = (n / 10) | 0;
    buf[--pos] = 0x30 + n - q * 10;
    n = q;
  } while (n !== 0);
  return pos;
}

/** Writes a whole `2^31 <= m < 2^52` as digits. */
function writeWhole(buf: Uint8Array, at: number, m: number): number {
  let count = 10;
  while (m >= POW10[count]!) count++;
  const end = at + count;
  let pos = end;
  let n = m;
  do {
    const q = Math.floor(n / 10);
    buf[--pos] = 0x30 + n - q * 10;
    n = q;
  } while (n !== 0);
  return end;
}

/** Writes `m / 10^k` (`m` whole, below 2^52, `k >= 1`) with `k` decimals: "ddd.dd", or "0.00ddd". */
function writeDecimal(buf: Uint8Array, at: number, m: number, k: number): number {
  if (m >= INT32) {
    // Rare: written whole, then the point moved in.
    const end = writeWhole(buf, at, m);
    const digits = end - at;
    if (digits > k) {
      buf.copyWithin(end - k + 1, end - k, end);
      buf[end - k] = 0x2e;
      return end + 1;
    }
    const shift = k - digits + 2;
    buf.copyWithin(at + shift, at, end);
    buf[at] = 0x30;
    buf[at + 1] = 0x2e;
    for (let i = at + 2; i < at + shift; i++) buf[i] = 0x30;
    return end + shift;
  }
  let n = m | 0;
  const digits = intDigits(n);
  const end = at + (digits > k ? digits + 1 : k + 2);
  let pos = end;
  for (let i = 0; i < k; i++) {
    const q = (n / 10) | 0;
    buf[--pos] = 0x30 + n - q * 10;
    n = q;
  }
  buf[--pos] = 0x2e;
  digitsBefore(buf, pos, n);
  return end;
}

/** Crockford's base32, as ULIDs spell it: no I, L, O or U. */
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const CODES = Array.from(ALPHABET, (char) => char.charCodeAt(0));
/** Base32 digits of the time (48 bits) and of the random part (80 bits). */
const TIME_DIGITS = 10;
const RANDOM_DIGITS = 16;

/**
 * Makes message ids `msg_` + a ULID (https://github.com/ulid/spec): 48 bits
 * of milliseconds then 80 random bits, in Crockford base32, so ids sort in
 * the order they were made. Within one millisecond the random part counts up
 * from its first value (the spec's monotonic ULIDs): one random draw per
 * millisecond, not per id, and ids of one process never repeat or go back in
 * order, even when the clock does.
 * @param random random bytes
 * @param now wall clock, milliseconds since the epoch
 * @returns a function giving the next id
 */
export function createMessageIds(
  random: (size: number) => Uint8Array,
  now: () => number,
): () => string {
  const codes = new Array<number>(4 + TIME_DIGITS + RANDOM_DIGITS).fill(0);
  codes[0] = "m".charCodeAt(0);
  codes[1] = "s".charCodeAt(0);
  codes[2] = "g".charCodeAt(0);
  codes[3] = "_".charCodeAt(0);
  const digits = new Array<number>(RANDOM_DIGITS).fill(0);
  let last = -1;
  return () => {
    let time = Math.max(0, Math.floor(now()));
    if (time > last) {
      const bytes = random(10);
      // 80 bits into 16 digits of 5 bits, most significant first.
      let buffer = 0;
      let bits = 0;
      let at = 0;
      for (const byte of bytes) {
        buffer = (buffer << 8) | byte;
        bits += 8;
        while (bits >= 5) {
          bits -= 5;
          digits[at++] = (buffer >> bits) & 31;
        }
        buffer &= (1 << bits) - 1;
      }
    } else {
      // The same millisecond, or the clock went back: count on from the last id.
      time = last;
      let i = RANDOM_DIGITS - 1;
      while (i >= 0 && digits[i] === 31) digits[i--] = 0;
      if (i >= 0) digits[i]! += 1;
      else time = last + 1; // 2^80 ids in one millisecond: borrow the next one
    }
    if (time !== last) {
      let rest = time;
      for (let i = TIME_DIGITS - 1; i >= 0; i--) {
        codes[4 + i] = CODES[rest % 32]!;
        rest = Math.floor(rest / 32);
      }
      last = time;
    }
    for (let i = 0; i < RANDOM_DIGITS; i++) codes[4 + TIME_DIGITS + i] = CODES[digits[i]!]!;
    return String.fromCharCode(...codes);
  };
}

import { bytesEqual, decodeBase64Url, encodeBase64Url, scryptKey } from "../crypto/_internal.ts";

/** Options of {@linkcode hashPassword}. */
export interface HashPasswordOptions {
  /** Fresh random salt bytes (16 are plenty). */
  salt: Uint8Array;
  /**
   * scrypt CPU/memory cost N, a power of two.
   * @default {16384}
   */
  cost?: number;
}

const BLOCK_SIZE = 8;
const PARALLELISM = 1;
const KEY_LENGTH = 32;

/**
 * Hashes a password with scrypt (RFC 7914) into a self-describing string
 * `scrypt$N$r$p$<salt>$<hash>` (base64url), so the cost can rise later.
 * @param password the password
 * @param options salt and cost
 * @returns the encoded hash
 * @throws {RangeError} when the cost is not a power of two from 2 to 2^20
 */
export async function hashPassword(
  password: string,
  options: HashPasswordOptions,
): Promise<string> {
  const cost = options.cost ?? 16_384;
  if (!Number.isInteger(cost) || cost < 2 || cost > 2 ** 20 || (cost & (cost - 1)) !== 0) {
    throw new RangeError(
      `Cannot hash a password: the cost must be a power of two from 2 to 2^20: current value is ${cost}`,
    );
  }
  const key = await scryptKey(password, options.salt, {
    cost,
    blockSize: BLOCK_SIZE,
    parallelism: PARALLELISM,
    keyLength: KEY_LENGTH,
  });
  return `scrypt$${cost}$${BLOCK_SIZE}$${PARALLELISM}$${encodeBase64Url(options.salt)}$${
    encodeBase64Url(key)
  }`;
}

/**
 * Checks a password against a hash from {@linkcode hashPassword}, in time
 * independent of where they differ.
 * @param password the password presented
 * @param encoded the stored hash
 * @returns whether it matches; false for a malformed hash
 */
export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const parts = encoded.split("$");
  if (parts.length !== 6 || parts[0] !== "scrypt") return false;
  const cost = Number(parts[1]);
  if (Number(parts[2]) !== BLOCK_SIZE || Number(parts[3]) !== PARALLELISM) return false;
  if (!Number.isInteger(cost) || cost < 2 || cost > 2 ** 20 || (cost & (cost - 1)) !== 0) {
    return false;
  }
  const expected = decodeBase64Url(parts[5] ?? "");
  const key = await scryptKey(password, decodeBase64Url(parts[4] ?? ""), {
    cost,
    blockSize: BLOCK_SIZE,
    parallelism: PARALLELISM,
    keyLength: KEY_LENGTH,
  });
  return bytesEqual(key, expected);
}

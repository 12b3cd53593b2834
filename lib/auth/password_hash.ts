import { randomBytes, scrypt, timingSafeEqual } from "node:crypto";

/** Options of {@linkcode hashPassword}. */
export interface HashPasswordOptions {
  /**
   * scrypt CPU/memory cost N, a power of two.
   * @default {16384}
   */
  cost?: number;
  /** Salt bytes; random when absent (tests pass a fixed one). */
  salt?: Uint8Array;
}

const BLOCK_SIZE = 8;
const PARALLELISM = 1;
const KEY_LENGTH = 32;

function derive(password: string, salt: Uint8Array, cost: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize("NFC"), salt, KEY_LENGTH, {
      N: cost,
      r: BLOCK_SIZE,
      p: PARALLELISM,
      maxmem: 256 * cost * BLOCK_SIZE,
    }, (error, key) => (error === null ? resolve(key) : reject(error)));
  });
}

/**
 * Hashes a password with scrypt (RFC 7914) into a self-describing string
 * `scrypt$N$r$p$<salt>$<hash>` (base64url), so the cost can rise later.
 * @param password the password
 * @param options cost and salt
 * @returns the encoded hash
 * @throws {RangeError} when the cost is not a power of two from 2 to 2^20
 */
export async function hashPassword(password: string, options: HashPasswordOptions = {}): Promise<string> {
  const cost = options.cost ?? 16_384;
  if (!Number.isInteger(cost) || cost < 2 || cost > 2 ** 20 || (cost & (cost - 1)) !== 0) {
    throw new RangeError(`Cannot hash a password: the cost must be a power of two from 2 to 2^20: current value is ${cost}`);
  }
  const salt = options.salt ?? randomBytes(16);
  const key = await derive(password, salt, cost);
  return `scrypt$${cost}$${BLOCK_SIZE}$${PARALLELISM}$${Buffer.from(salt).toString("base64url")}$${key.toString("base64url")}`;
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
  if (Number(parts[2]) !== BLOCK_SIZE || Number(parts[3]) !== PARALLELISM || !Number.isInteger(cost)) return false;
  const expected = Buffer.from(parts[5]!, "base64url");
  const key = await derive(password, Buffer.from(parts[4]!, "base64url"), cost);
  return key.length === expected.length && timingSafeEqual(key, expected);
}

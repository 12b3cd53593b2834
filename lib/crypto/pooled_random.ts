import { randomFillSync } from "node:crypto";

/** Options of {@linkcode pooledRandom}. */
export interface PooledRandomOptions {
  /**
   * Bytes fetched from the system at a time.
   * @default {4096}
   */
  poolSize?: number;
}

/**
 * A cryptographically secure random source that fetches bytes from the
 * system in blocks and hands them out in slices: one system call serves many
 * tokens. Every byte is handed out once, and zeroed in the pool when it is.
 * @param options block size
 * @returns a function giving `size` fresh random bytes
 * @example
 * ```ts
 * const random = pooledRandom();
 * encodeBase64Url(random(32)); // 43 characters, 256 random bits
 * ```
 */
export function pooledRandom(options: PooledRandomOptions = {}): (size: number) => Uint8Array {
  const poolSize = options.poolSize ?? 4096;
  let pool = new Uint8Array(0);
  let at = 0;
  return (size: number): Uint8Array => {
    if (size > poolSize) return randomFillSync(new Uint8Array(size));
    if (at + size > pool.length) {
      pool = randomFillSync(new Uint8Array(poolSize));
      at = 0;
    }
    const bytes = pool.slice(at, at + size);
    // Bytes handed out (tokens, salts) do not stay behind in the pool.
    pool.fill(0, at, at + size);
    at += size;
    return bytes;
  };
}

import { scrypt } from "node:crypto";

/** Parameters of {@linkcode scryptKey} (RFC 7914). */
export interface ScryptParameters {
  /** CPU/memory cost N, a power of two. */
  readonly cost: number;
  /** Block size r. */
  readonly blockSize: number;
  /** Parallelization p. */
  readonly parallelism: number;
  /** Bytes of key to derive. */
  readonly keyLength: number;
}

/**
 * Derives a key from a password with scrypt, off the main thread.
 * @param password the password, normalized to NFC so that Unicode forms agree
 * @param salt the salt
 * @param parameters cost, block size, parallelism and key length
 * @returns the key
 */
export function scryptKey(
  password: string,
  salt: Uint8Array,
  parameters: ScryptParameters,
): Promise<Uint8Array> {
  const { cost, blockSize, parallelism, keyLength } = parameters;
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize("NFC"),
      salt,
      keyLength,
      {
        N: cost,
        r: blockSize,
        p: parallelism,
        maxmem: 256 * cost * blockSize + 1024 * 1024,
      },
      (
        error,
        key,
      ) => (error === null
        ? resolve(new Uint8Array(key.buffer, key.byteOffset, key.byteLength))
        : reject(error)),
    );
  });
}

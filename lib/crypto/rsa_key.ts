import { createPublicKey, hash, type KeyObject } from "node:crypto";
import { CryptoError } from "./errors.ts";

/**
 * A key object of `node:crypto` (a `KeyObject`), declared by what is read of
 * it so that the package's types need no `@types/node`: a `KeyObject` is
 * one, and the functions that take one check at run time that it is.
 */
export interface NodeKeyObject {
  readonly type: "secret" | "public" | "private";
  /** `rsa` for an RSA key. */
  readonly asymmetricKeyType?: string | undefined;
}

/** An RSA public key ready to encrypt to, with its key id. */
export interface RsaPublicKey {
  /** The public key: a `KeyObject` of `node:crypto`. */
  readonly key: NodeKeyObject;
  /** The RFC 7638 JWK thumbprint (SHA-256, base64url), used as the JWE `kid`. */
  readonly kid: string;
  /** The modulus length in bits. */
  readonly bits: number;
}

const MIN_BITS = 2048;
// OpenSSL refuses RSA operations on larger moduli, so such a key could never encrypt.
const MAX_BITS = 16384;
const PEM_PATTERN = /^-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)\r?\n-----END \1-----$/;
const KEY_LABELS: ReadonlySet<string> = new Set([
  "PUBLIC KEY",
  "RSA PUBLIC KEY",
  "PRIVATE KEY",
  "RSA PRIVATE KEY",
]);

/**
 * Reads an RSA key from PEM text: a public key (SPKI or PKCS#1) or an
 * unencrypted private key (PKCS#8 or PKCS#1), of which the public half is
 * kept. The key must have 2048 to 16384 bits.
 * @param pem one PEM block; surrounding whitespace is ignored
 * @returns the public key, its thumbprint and its size
 * @throws {TypeError} when `pem` is not a string
 * @throws {CryptoError} `ERR_CRYPTO_INVALID_KEY` when the text is not such a key, the key is
 * encrypted, not RSA, or too small; the message never quotes the key
 * @example
 * ```ts
 * const { kid, bits } = parseRsaKey(readFileSync("tenant.pub.pem", "utf8"));
 * ```
 */
export function parseRsaKey(pem: string): RsaPublicKey {
  if (typeof pem !== "string") throw new TypeError("Cannot read the RSA key: it is not a string");
  const text = pem.trim();
  const match = PEM_PATTERN.exec(text);
  const label = match?.[1] ?? "";
  const body = match?.[2] ?? "";
  if (label === "ENCRYPTED PRIVATE KEY" || /^Proc-Type:\s*4,\s*ENCRYPTED/m.test(body)) {
    // Checked before parsing, so that OpenSSL never asks for a passphrase.
    throw invalidKey("the private key is encrypted; give it unencrypted, or the public key");
  }
  if (!KEY_LABELS.has(label) || body.includes("-----")) {
    throw invalidKey("it is not one PEM public key or private key");
  }
  let key: KeyObject;
  try {
    key = createPublicKey(text);
  } catch (error) {
    throw invalidKey("its PEM content is not a valid key", error);
  }
  if (key.asymmetricKeyType !== "rsa") throw invalidKey("it is not an RSA key");
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (bits < MIN_BITS) {
    throw invalidKey(`it has ${bits} bits, and at least ${MIN_BITS} are needed`);
  }
  if (bits > MAX_BITS) {
    throw invalidKey(`it has ${bits} bits, and at most ${MAX_BITS} are supported`);
  }
  const exponent = key.asymmetricKeyDetails?.publicExponent ?? 0n;
  // An exponent of 1 would leave the OAEP-padded content key unencrypted.
  if (exponent < 3n || exponent % 2n === 0n) {
    throw invalidKey("its public exponent is not an odd number of at least 3");
  }
  return Object.freeze({ key, kid: thumbprint(key), bits });
}

function thumbprint(key: KeyObject): string {
  const { e, n } = key.export({ format: "jwk" });
  // RFC 7638 §3.2: the required members only, in lexical order, no whitespace.
  return hash("sha256", JSON.stringify({ e, kty: "RSA", n }), "base64url");
}

function invalidKey(reason: string, cause?: unknown): CryptoError {
  const message = `Cannot use the RSA key: ${reason}`;
  return cause === undefined
    ? new CryptoError("ERR_CRYPTO_INVALID_KEY", message)
    : new CryptoError("ERR_CRYPTO_INVALID_KEY", message, { cause });
}

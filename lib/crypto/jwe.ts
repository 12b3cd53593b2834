import {
  constants,
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  KeyObject,
  privateDecrypt,
  publicEncrypt,
  randomFillSync,
} from "node:crypto";
import { decodeBase64Url, encodeBase64Url } from "./base64url.ts";
import { CryptoError } from "./errors.ts";
import type { NodeKeyObject, RsaPublicKey } from "./rsa_key.ts";

const ALG = "RSA-OAEP-256";
const ENC = "A256GCM";
const CEK_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const BASE64URL_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const BASE64URL_PATTERN = /^[A-Za-z0-9_-]*$/;
// One message for every failure: which step failed must stay hidden (RFC 7516 §11.5).
const DECRYPT_FAILED = "Cannot decrypt the JWE: it is malformed, altered or for another key";

/**
 * Encrypts bytes to an RSA public key as a JWE in compact serialization
 * (RFC 7516): a random AES-256-GCM content key, wrapped with RSA-OAEP-256
 * (SHA-256 for OAEP and MGF1), under the protected header
 * `{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":…}`.
 * @param plaintext the bytes to encrypt, of any length
 * @param key the recipient's key, from {@linkcode parseRsaKey}
 * @param random gives random bytes (32 for the content key, then 12 for the IV)
 * @returns `header.encryptedKey.iv.ciphertext.tag`, each part base64url
 * @throws {TypeError} when the plaintext is not a Uint8Array or the key is not RSA
 * @throws {RangeError} when `random` does not give the number of bytes asked for
 * @example
 * ```ts
 * const jwe = encryptJwe(new TextEncoder().encode(body), parseRsaKey(pem), pooledRandom());
 * ```
 */
export function encryptJwe(
  plaintext: Uint8Array,
  key: RsaPublicKey,
  random: (size: number) => Uint8Array,
): string {
  if (!(plaintext instanceof Uint8Array)) {
    throw new TypeError("Cannot encrypt the JWE: the plaintext is not a Uint8Array");
  }
  if (!(key.key instanceof KeyObject) || key.key.asymmetricKeyType !== "rsa") {
    throw new TypeError("Cannot encrypt the JWE: the key is not an RSA key from parseRsaKey()");
  }
  const header = encodeBase64Url(
    Buffer.from(JSON.stringify({ alg: ALG, enc: ENC, kid: key.kid }), "utf8"),
  );
  const cek = randomBytes(random, CEK_BYTES);
  try {
    const iv = randomBytes(random, IV_BYTES);
    const encryptedKey = publicEncrypt(
      { key: key.key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha256" },
      cek,
    );
    const cipher = createCipheriv("aes-256-gcm", cek, iv, { authTagLength: TAG_BYTES });
    // The AAD is the ASCII of the encoded header, not the decoded JSON (RFC 7516 §5.1 step 14).
    cipher.setAAD(Buffer.from(header, "latin1"));
    const ciphertext = cipher.update(plaintext);
    cipher.final();
    const tag = cipher.getAuthTag();
    return `${header}.${encodeBase64Url(encryptedKey)}.${encodeBase64Url(iv)}.` +
      `${encodeBase64Url(ciphertext)}.${encodeBase64Url(tag)}`;
  } finally {
    cek.fill(0);
  }
}

/**
 * Decrypts a compact JWE made with `RSA-OAEP-256` and `A256GCM`, as
 * {@linkcode encryptJwe} makes (other producers' extra header members are
 * ignored; `crit` and `zip` are refused).
 * @param jwe the compact serialization
 * @param privateKey the RSA private key, as a `KeyObject` of `node:crypto` or unencrypted PEM
 * @returns the plaintext
 * @throws {CryptoError} `ERR_CRYPTO_DECRYPT_FAILED`, with one message whatever the cause,
 * when the JWE is malformed, uses another algorithm, was altered or is for another key
 * @throws {CryptoError} `ERR_CRYPTO_INVALID_KEY` when the private key is not an RSA private key
 * @throws {TypeError} when an argument has the wrong type
 */
export function decryptJwe(jwe: string, privateKey: NodeKeyObject | string): Uint8Array {
  if (typeof jwe !== "string") throw new TypeError("Cannot decrypt the JWE: it is not a string");
  const key = toPrivateKey(privateKey);
  try {
    return openJwe(jwe, key);
  } catch {
    // No cause: it would tell which step failed.
    throw new CryptoError("ERR_CRYPTO_DECRYPT_FAILED", DECRYPT_FAILED);
  }
}

function openJwe(jwe: string, key: KeyObject): Uint8Array {
  const parts = jwe.split(".");
  if (parts.length !== 5) throw new Error("part count");
  const [headerText = "", keyText = "", ivText = "", ciphertextText = "", tagText = ""] = parts;
  const header: unknown = JSON.parse(
    new TextDecoder("utf-8", { fatal: true }).decode(decodeStrict(headerText)),
  );
  if (
    typeof header !== "object" || header === null || Array.isArray(header) ||
    !("alg" in header) || header.alg !== ALG || !("enc" in header) || header.enc !== ENC ||
    "crit" in header || "zip" in header
  ) {
    throw new Error("header");
  }
  const encryptedKey = decodeStrict(keyText);
  const iv = decodeStrict(ivText);
  const ciphertext = decodeStrict(ciphertextText);
  const tag = decodeStrict(tagText);
  if (iv.length !== IV_BYTES || tag.length !== TAG_BYTES) throw new Error("lengths");
  let cek: Uint8Array;
  try {
    cek = privateDecrypt(
      { key, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha256" },
      encryptedKey,
    );
    if (cek.length !== CEK_BYTES) throw new Error("content key length");
  } catch {
    // A bad wrapped key goes on with a random content key, so that it fails
    // at the tag check like any other alteration (RFC 7516 §11.5).
    cek = randomFillSync(new Uint8Array(CEK_BYTES));
  }
  try {
    const decipher = createDecipheriv("aes-256-gcm", cek, iv, { authTagLength: TAG_BYTES });
    decipher.setAuthTag(tag);
    decipher.setAAD(Buffer.from(headerText, "latin1"));
    const plaintext = decipher.update(ciphertext);
    decipher.final();
    return new Uint8Array(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength);
  } finally {
    cek.fill(0);
  }
}

function toPrivateKey(privateKey: NodeKeyObject | string): KeyObject {
  let key: KeyObject;
  if (typeof privateKey === "string") {
    try {
      key = createPrivateKey(privateKey);
    } catch (error) {
      throw new CryptoError(
        "ERR_CRYPTO_INVALID_KEY",
        "Cannot use the private key: it is not an unencrypted PEM private key",
        { cause: error },
      );
    }
  } else if (privateKey instanceof KeyObject) {
    key = privateKey;
  } else {
    throw new TypeError("Cannot decrypt the JWE: the private key is not a KeyObject or a string");
  }
  if (key.type !== "private" || key.asymmetricKeyType !== "rsa") {
    throw new CryptoError(
      "ERR_CRYPTO_INVALID_KEY",
      "Cannot use the private key: it is not an RSA private key",
    );
  }
  return key;
}

/** Decodes base64url without padding, refusing anything but the one canonical spelling. */
function decodeStrict(text: string): Uint8Array {
  const rest = text.length % 4;
  if (rest === 1 || !BASE64URL_PATTERN.test(text)) throw new Error("base64url");
  if (rest !== 0) {
    // The last character's low bits lie beyond the data and must be zero.
    const last = BASE64URL_ALPHABET.indexOf(text.charAt(text.length - 1));
    if ((last & (rest === 2 ? 0x0f : 0x03)) !== 0) throw new Error("base64url");
  }
  return decodeBase64Url(text);
}

function randomBytes(random: (size: number) => Uint8Array, size: number): Uint8Array {
  const bytes = random(size);
  if (!(bytes instanceof Uint8Array) || bytes.length !== size) {
    throw new RangeError(`Cannot encrypt the JWE: random(${size}) did not give ${size} bytes`);
  }
  return bytes;
}

import assert from "node:assert/strict";
import {
  constants,
  createCipheriv,
  generateKeyPairSync,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
} from "node:crypto";
import type { KeyObject } from "node:crypto";
import { describe, it } from "node:test";
import {
  calculateJwkThumbprint,
  compactDecrypt,
  CompactEncrypt,
  decodeProtectedHeader,
} from "jose";
import { createPrng } from "../_helpers/prng.ts";
import {
  CryptoError,
  decryptJwe,
  encryptJwe,
  parseRsaKey,
  pooledRandom,
} from "../../lib/crypto/mod.ts";
import { decodeBase64Url, encodeBase64Url } from "../../lib/crypto/base64url.ts";

/** Exports a key as PEM text. */
function toPem(key: KeyObject, type: "spki" | "pkcs8"): string {
  return key.export({ format: "pem", type }).toString();
}

// Generated once for the whole file: a 4096-bit key takes a second or more.
const rsa2048 = generateKeyPairSync("rsa", { modulusLength: 2048 });
const rsa4096 = generateKeyPairSync("rsa", { modulusLength: 4096 });
const other2048 = generateKeyPairSync("rsa", { modulusLength: 2048 });
const keys = [
  { bits: 2048, pair: rsa2048, key: parseRsaKey(toPem(rsa2048.publicKey, "spki")) },
  { bits: 4096, pair: rsa4096, key: parseRsaKey(toPem(rsa4096.publicKey, "spki")) },
] as const;
const key2048 = keys[0].key;

const random = pooledRandom();
const FAILED = { name: "CryptoError", code: "ERR_CRYPTO_DECRYPT_FAILED" } as const;
const INVALID_KEY = { name: "CryptoError", code: "ERR_CRYPTO_INVALID_KEY" } as const;

const sizes = [
  { name: "0 bytes", size: 0 },
  { name: "1 byte", size: 1 },
  { name: "1 KiB", size: 1024 },
  { name: "64 KiB", size: 64 * 1024 },
  { name: "1 MiB", size: 1024 * 1024 },
] as const;

/** Bytes that differ from one position to the next, so misplaced blocks show. */
function payload(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + (i >> 8)) & 0xff;
  return bytes;
}

/** Replaces the middle character of one part by another base64url character. */
function tamper(jwe: string, part: number): string {
  const parts = jwe.split(".");
  const text = parts[part] ?? "";
  const at = Math.floor(text.length / 2);
  const replacement = text[at] === "A" ? "B" : "A";
  parts[part] = text.slice(0, at) + replacement + text.slice(at + 1);
  return parts.join(".");
}

/** Builds an otherwise valid RSA-OAEP-256 + A256GCM JWE under any protected header. */
function sealWithHeader(
  header: string | Uint8Array,
  publicKey: KeyObject,
  plaintext: Uint8Array,
  wrapped: Uint8Array = randomBytes(32),
): string {
  const encoded = encodeBase64Url(typeof header === "string" ? Buffer.from(header) : header);
  const cek = wrapped.length === 32 ? wrapped : randomBytes(32);
  const iv = randomBytes(12);
  const encryptedKey = publicEncrypt(
    { key: publicKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha256" },
    wrapped,
  );
  const cipher = createCipheriv("aes-256-gcm", cek, iv);
  cipher.setAAD(Buffer.from(encoded));
  const ciphertext = cipher.update(plaintext);
  cipher.final();
  return [encoded, encryptedKey, iv, ciphertext, cipher.getAuthTag()]
    .map((part) => (typeof part === "string" ? part : encodeBase64Url(part)))
    .join(".");
}

describe("encryptJwe()", () => {
  for (const { bits, pair, key } of keys) {
    for (const { name, size } of sizes) {
      it(`makes a JWE that jose decrypts, ${name} to a ${bits}-bit key`, async () => {
        const plaintext = payload(size);
        const jwe = encryptJwe(plaintext, key, random);
        const result = await compactDecrypt(jwe, pair.privateKey);
        assert.deepEqual(new Uint8Array(result.plaintext), plaintext);
        assert.deepEqual(result.protectedHeader, {
          alg: "RSA-OAEP-256",
          enc: "A256GCM",
          kid: key.kid,
        });
      });
    }
  }

  it("writes the protected header as alg, enc and kid, in that order", () => {
    const jwe = encryptJwe(payload(3), key2048, random);
    const header = new TextDecoder().decode(decodeBase64Url(jwe.split(".")[0] ?? ""));
    assert.equal(header, `{"alg":"RSA-OAEP-256","enc":"A256GCM","kid":"${key2048.kid}"}`);
  });

  it("names the key by its RFC 7638 thumbprint, as jose computes it", async () => {
    const jwe = encryptJwe(payload(3), key2048, random);
    const thumbprint = await calculateJwkThumbprint(rsa2048.publicKey.export({ format: "jwk" }));
    assert.equal(decodeProtectedHeader(jwe).kid, thumbprint);
  });

  it("gives five base64url parts of the expected sizes", () => {
    const jwe = encryptJwe(payload(100), keys[1].key, random);
    const parts = jwe.split(".");
    assert.equal(parts.length, 5);
    for (const part of parts) assert.match(part, /^[A-Za-z0-9_-]*$/);
    const sizesOf = parts.slice(1).map((part) => decodeBase64Url(part).length);
    assert.deepEqual(sizesOf, [512, 12, 100, 16]);
  });

  it("takes the content key and then the IV from random", () => {
    const drawn: Uint8Array[] = [];
    const recording = (size: number): Uint8Array => {
      const bytes = randomBytes(size);
      drawn.push(new Uint8Array(bytes));
      return new Uint8Array(bytes);
    };
    const [, encryptedKey = "", iv = ""] = encryptJwe(payload(10), key2048, recording).split(".");
    assert.deepEqual(drawn.map((bytes) => bytes.length), [32, 12]);
    const cek = privateDecrypt(
      { key: rsa2048.privateKey, padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: "sha256" },
      decodeBase64Url(encryptedKey),
    );
    assert.deepEqual(new Uint8Array(cek), drawn[0]);
    assert.deepEqual(decodeBase64Url(iv), drawn[1]);
  });

  it("wipes the content key it was given", () => {
    let cek = new Uint8Array(0);
    const keeping = (size: number): Uint8Array => {
      const bytes = randomBytes(size);
      if (size === 32) cek = bytes;
      return bytes;
    };
    encryptJwe(payload(10), key2048, keeping);
    assert.equal(cek.length, 32);
    assert.ok(cek.every((byte) => byte === 0));
  });

  it("leaves the plaintext as it was", () => {
    const plaintext = payload(1000);
    encryptJwe(plaintext, key2048, random);
    assert.deepEqual(plaintext, payload(1000));
  });

  it("encrypts a view of a larger buffer by its own bytes only", () => {
    const whole = payload(64);
    const jwe = encryptJwe(whole.subarray(10, 20), key2048, random);
    assert.deepEqual(decryptJwe(jwe, rsa2048.privateKey), payload(64).subarray(10, 20));
  });

  it("gives a different JWE each time for the same input", () => {
    const plaintext = payload(32);
    assert.notEqual(encryptJwe(plaintext, key2048, random), encryptJwe(plaintext, key2048, random));
  });

  it("handles 4 MiB", () => {
    const plaintext = payload(4 * 1024 * 1024);
    const jwe = encryptJwe(plaintext, key2048, random);
    assert.deepEqual(decryptJwe(jwe, rsa2048.privateKey), plaintext);
  });

  it("refuses a random source that gives the wrong number of bytes with RangeError", () => {
    assert.throws(() => encryptJwe(payload(1), key2048, (size) => new Uint8Array(size + 1)), {
      name: "RangeError",
    });
    assert.throws(
      () => encryptJwe(payload(1), key2048, (size) => new Uint8Array(size === 12 ? 8 : size)),
      { name: "RangeError" },
    );
  });

  it("refuses a plaintext that is not bytes or a key that is not RSA with TypeError", () => {
    assert.throws(() => encryptJwe("text" as unknown as Uint8Array, key2048, random), {
      name: "TypeError",
    });
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey;
    assert.throws(() => encryptJwe(payload(1), { ...key2048, key: ec }, random), {
      name: "TypeError",
    });
  });
});

describe("decryptJwe()", () => {
  it("decrypts its own JWEs, with a key object or PEM", () => {
    const plaintext = payload(300);
    const jwe = encryptJwe(plaintext, keys[1].key, random);
    assert.deepEqual(decryptJwe(jwe, rsa4096.privateKey), plaintext);
    const pem = toPem(rsa4096.privateKey, "pkcs8");
    assert.deepEqual(decryptJwe(jwe, pem), plaintext);
  });

  for (const { bits, pair } of keys) {
    it(`decrypts what jose's CompactEncrypt makes for a ${bits}-bit key`, async () => {
      for (const { size } of sizes) {
        const plaintext = payload(size);
        const jwe = await new CompactEncrypt(plaintext)
          .setProtectedHeader({ alg: "RSA-OAEP-256", enc: "A256GCM" })
          .encrypt(pair.publicKey);
        assert.deepEqual(decryptJwe(jwe, pair.privateKey), plaintext);
      }
    });
  }

  it("round-trips random payloads (seeded)", () => {
    const seed = 0x5eed_1e7;
    const prng = createPrng(seed);
    for (let round = 0; round < 40; round++) {
      const plaintext = new Uint8Array(prng.int(3000));
      for (let i = 0; i < plaintext.length; i++) plaintext[i] = prng.int(256);
      const jwe = encryptJwe(plaintext, key2048, random);
      const decrypted = decryptJwe(jwe, rsa2048.privateKey);
      assert.deepEqual(decrypted, plaintext, `seed ${seed}, round ${round}`);
    }
  });

  it("ignores extra protected header members such as typ and cty", () => {
    const header = '{"alg":"RSA-OAEP-256","enc":"A256GCM","typ":"JWE","cty":"json","x":[1]}';
    const jwe = sealWithHeader(header, rsa2048.publicKey, payload(5));
    assert.deepEqual(decryptJwe(jwe, rsa2048.privateKey), payload(5));
  });

  const partNames = ["protected header", "encrypted key", "IV", "ciphertext", "tag"] as const;
  partNames.forEach((partName, part) => {
    it(`fails, as jose does, when one character of the ${partName} changes`, async () => {
      const jwe = encryptJwe(payload(100), key2048, random);
      const altered = tamper(jwe, part);
      assert.notEqual(altered, jwe);
      await assert.rejects(compactDecrypt(altered, rsa2048.privateKey));
      assert.throws(() => decryptJwe(altered, rsa2048.privateKey), FAILED);
    });
  });

  it("fails, as jose does, with another key", async () => {
    const jwe = encryptJwe(payload(100), key2048, random);
    await assert.rejects(compactDecrypt(jwe, other2048.privateKey));
    assert.throws(() => decryptJwe(jwe, other2048.privateKey), FAILED);
    assert.throws(() => decryptJwe(jwe, rsa4096.privateKey), FAILED);
  });

  const valid = encryptJwe(payload(100), key2048, random);
  const [header = "", encryptedKey = "", iv = "", ciphertext = "", tag = ""] = valid.split(".");
  /** The valid JWE with some of its parts replaced. */
  const withParts = (replaced: { readonly [part: number]: string }): string =>
    [header, encryptedKey, iv, ciphertext, tag].map((text, at) => replaced[at] ?? text).join(".");
  /** A JWE that is valid but for its protected header. */
  const withHeader = (text: string | Uint8Array, wrapped?: Uint8Array): string =>
    sealWithHeader(text, rsa2048.publicKey, payload(5), wrapped);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  const lastBitsSet = (text: string): string =>
    text.slice(0, -1) + alphabet.charAt(alphabet.indexOf(text.charAt(text.length - 1)) | 1);
  const otherTag = encryptJwe(payload(100), key2048, random).split(".")[4] ?? "";
  const malformed = [
    { name: "four parts", jwe: [header, encryptedKey, iv, ciphertext].join(".") },
    { name: "six parts", jwe: `${valid}.` },
    { name: "the empty string", jwe: "" },
    { name: "a character outside base64url", jwe: withParts({ 3: `${ciphertext}*` }) },
    { name: "standard base64 characters", jwe: withParts({ 3: `+${ciphertext.slice(1)}` }) },
    { name: "padding", jwe: withParts({ 4: `${tag}==` }) },
    {
      name: "a part of impossible length",
      jwe: withParts({ 3: ciphertext + "A".repeat((5 - (ciphertext.length % 4)) % 4) }),
    },
    { name: "stray low bits in a tag's last character", jwe: withParts({ 4: lastBitsSet(tag) }) },
    { name: "a truncated tag", jwe: withParts({ 4: tag.slice(0, 16) }) },
    { name: "an IV of 16 bytes", jwe: withParts({ 2: encodeBase64Url(randomBytes(16)) }) },
    { name: "a truncated encrypted key", jwe: withParts({ 1: encryptedKey.slice(0, 300) }) },
    { name: "an empty encrypted key", jwe: withParts({ 1: "" }) },
    { name: "a ciphertext cut short", jwe: withParts({ 3: ciphertext.slice(0, 40) }) },
    { name: "the tag of another JWE", jwe: withParts({ 4: otherTag }) },
    { name: "a header that is not JSON", jwe: withHeader("alg=RSA-OAEP-256") },
    { name: "a header that is a JSON array", jwe: withHeader('["RSA-OAEP-256","A256GCM"]') },
    { name: "a header that is null", jwe: withHeader("null") },
    { name: "a header that is not UTF-8", jwe: withHeader(Uint8Array.of(0x7b, 0xff, 0x7d)) },
    { name: "a header without alg", jwe: withHeader('{"enc":"A256GCM"}') },
    { name: "a header with alg RSA-OAEP", jwe: withHeader('{"alg":"RSA-OAEP","enc":"A256GCM"}') },
    { name: "a header without enc", jwe: withHeader('{"alg":"RSA-OAEP-256"}') },
    {
      name: "a header with enc A128GCM",
      jwe: withHeader('{"alg":"RSA-OAEP-256","enc":"A128GCM"}'),
    },
    {
      name: "a header with crit",
      jwe: withHeader('{"alg":"RSA-OAEP-256","enc":"A256GCM","crit":["exp"],"exp":1}'),
    },
    {
      name: "a header with zip",
      jwe: withHeader('{"alg":"RSA-OAEP-256","enc":"A256GCM","zip":"DEF"}'),
    },
    {
      name: "a wrapped content key of 16 bytes",
      jwe: withHeader('{"alg":"RSA-OAEP-256","enc":"A256GCM"}', randomBytes(16)),
    },
  ] as const;
  for (const c of malformed) {
    it(`fails on ${c.name} with ERR_CRYPTO_DECRYPT_FAILED`, () => {
      assert.throws(() => decryptJwe(c.jwe, rsa2048.privateKey), FAILED);
    });
  }

  it("refuses jose's JWEs with another alg or enc", async () => {
    const headers = [
      { alg: "RSA-OAEP", enc: "A256GCM" },
      { alg: "RSA-OAEP-256", enc: "A128GCM" },
    ];
    for (const header of headers) {
      const jwe = await new CompactEncrypt(payload(8))
        .setProtectedHeader(header)
        .encrypt(rsa2048.publicKey);
      assert.throws(() => decryptJwe(jwe, rsa2048.privateKey), FAILED);
    }
  });

  it("gives one message, and no cause, whatever failed", () => {
    const jwes = [
      ...malformed.map((c) => c.jwe),
      ...[0, 1, 2, 3, 4].map((part) => tamper(valid, part)),
    ];
    const messages = new Set<string>();
    for (const jwe of jwes) {
      try {
        decryptJwe(jwe, rsa2048.privateKey);
        assert.fail("decrypted a bad JWE");
      } catch (error) {
        assert.ok(error instanceof CryptoError);
        assert.equal(error.code, "ERR_CRYPTO_DECRYPT_FAILED");
        assert.equal(error.cause, undefined);
        messages.add(error.message);
      }
    }
    assert.deepEqual([...messages], [
      "Cannot decrypt the JWE: it is malformed, altered or for another key",
    ]);
  });

  it("refuses a key that is not an RSA private key with ERR_CRYPTO_INVALID_KEY", () => {
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    assert.throws(() => decryptJwe(valid, rsa2048.publicKey), INVALID_KEY);
    assert.throws(() => decryptJwe(valid, ec), INVALID_KEY);
    assert.throws(() => decryptJwe(valid, "not a PEM key"), INVALID_KEY);
    const spki = toPem(rsa2048.publicKey, "spki");
    assert.throws(() => decryptJwe(valid, spki), INVALID_KEY);
  });

  it("refuses arguments of the wrong type with TypeError", () => {
    assert.throws(() => decryptJwe(42 as unknown as string, rsa2048.privateKey), {
      name: "TypeError",
    });
    assert.throws(() => decryptJwe(valid, {} as unknown as KeyObject), { name: "TypeError" });
  });
});

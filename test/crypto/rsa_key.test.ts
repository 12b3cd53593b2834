import assert from "node:assert/strict";
import { createPublicKey, generateKeyPairSync, KeyObject } from "node:crypto";
import { describe, it } from "node:test";
import { calculateJwkThumbprint } from "jose";
import { parseRsaKey } from "../../lib/crypto/mod.ts";

/** Exports a key as PEM text. */
function toPem(key: KeyObject, type: "spki" | "pkcs1" | "pkcs8" | "sec1"): string {
  return key.export({ format: "pem", type }).toString();
}

// Generated once for the whole file: RSA key generation is slow.
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
const spki = toPem(rsa.publicKey, "spki");
const pkcs1Public = toPem(rsa.publicKey, "pkcs1");
const pkcs8 = toPem(rsa.privateKey, "pkcs8");
const pkcs1Private = toPem(rsa.privateKey, "pkcs1");
const jwk = rsa.publicKey.export({ format: "jwk" });

const INVALID_KEY = { name: "CryptoError", code: "ERR_CRYPTO_INVALID_KEY" } as const;

/** The base64 lines of a PEM block, which no error message may quote. */
function pemLines(pem: string): string[] {
  return pem.split(/\r?\n/).filter((line) => /^[A-Za-z0-9+/=]{16,}$/.test(line));
}

describe("parseRsaKey()", () => {
  const accepted = [
    { name: "reads an SPKI public key", pem: spki },
    { name: "reads a PKCS#1 public key", pem: pkcs1Public },
    { name: "reads the public half of a PKCS#8 private key", pem: pkcs8 },
    { name: "reads the public half of a PKCS#1 private key", pem: pkcs1Private },
    { name: "reads a key with CRLF line ends", pem: spki.replace(/\n/g, "\r\n") },
    { name: "reads a key with surrounding whitespace", pem: `\n  ${spki}\n\n` },
  ] as const;
  for (const c of accepted) {
    it(c.name, async () => {
      const parsed = parseRsaKey(c.pem);
      assert.equal(parsed.key.type, "public");
      assert.equal(parsed.bits, 2048);
      assert.ok(parsed.key instanceof KeyObject, "a KeyObject of node:crypto");
      assert.deepEqual(parsed.key.export({ format: "jwk" }), jwk);
      assert.equal(parsed.kid, await calculateJwkThumbprint(jwk, "sha256"));
    });
  }

  it("gives the RFC 7638 thumbprint of the RFC's own example key", () => {
    // RFC 7638 §3.1: the thumbprint of this key is NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs.
    const n = "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhD" +
      "R1L6tSoc_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v" +
      "-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdk" +
      "t-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw";
    const key = createPublicKey({ key: { kty: "RSA", n, e: "AQAB" }, format: "jwk" });
    const expected = "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs";
    assert.equal(parseRsaKey(toPem(key, "spki")).kid, expected);
  });

  it("gives the same kid for the public and the private PEM of one key", () => {
    assert.equal(parseRsaKey(spki).kid, parseRsaKey(pkcs1Private).kid);
  });

  it("gives another key another kid", () => {
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey;
    assert.notEqual(parseRsaKey(toPem(other, "spki")).kid, parseRsaKey(spki).kid);
  });

  it("returns a frozen record", () => {
    assert.ok(Object.isFrozen(parseRsaKey(spki)));
  });

  const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const ed25519 = generateKeyPairSync("ed25519");
  const pss = generateKeyPairSync("rsa-pss", { modulusLength: 2048 });
  const small = generateKeyPairSync("rsa", { modulusLength: 1024 });
  const withExponent = (e: string): KeyObject =>
    createPublicKey({ key: { kty: "RSA", n: jwk.n ?? "", e }, format: "jwk" });
  const exponentOne = withExponent("AQ");
  // A public modulus need not be a real product of primes to be parsed.
  const huge = new Uint8Array(16384 / 8 + 1).fill(0xff);
  const hugeKey = createPublicKey({
    key: { kty: "RSA", n: Buffer.from(huge).toString("base64url"), e: "AQAB" },
    format: "jwk",
  });
  const exponentEven = withExponent("AQAA");
  const rejected = [
    { name: "garbage", pem: "not a key at all" },
    { name: "the empty string", pem: "" },
    { name: "a PEM header alone", pem: "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----" },
    {
      name: "mismatched BEGIN and END labels",
      pem: spki.replace("END PUBLIC KEY", "END PRIVATE KEY"),
    },
    { name: "a corrupted body", pem: spki.replace(/\n[A-Za-z0-9+/]{8}/, "\nAAAAAAAA") },
    { name: "a body that is not base64", pem: spki.replace(/\n[A-Za-z0-9+/]{4}/, "\n!!!!") },
    { name: "two keys in one text", pem: `${spki}${pkcs1Public}` },
    { name: "text before the key", pem: `key:\n${spki}` },
    { name: "a certificate label", pem: spki.replaceAll("PUBLIC KEY", "CERTIFICATE") },
    { name: "an EC public key", pem: toPem(ec.publicKey, "spki") },
    { name: "an EC private key", pem: toPem(ec.privateKey, "pkcs8") },
    { name: "a SEC1 EC private key", pem: toPem(ec.privateKey, "sec1") },
    { name: "an Ed25519 key", pem: toPem(ed25519.publicKey, "spki") },
    { name: "an RSA-PSS key", pem: toPem(pss.publicKey, "spki") },
    { name: "a 1024-bit RSA key", pem: toPem(small.publicKey, "spki") },
    { name: "a 1024-bit RSA private key", pem: toPem(small.privateKey, "pkcs1") },
    { name: "a key of more than 16384 bits", pem: toPem(hugeKey, "spki") },
    { name: "an RSA key with exponent 1", pem: toPem(exponentOne, "spki") },
    { name: "an RSA key with an even exponent", pem: toPem(exponentEven, "spki") },
    {
      name: "an encrypted PKCS#8 private key",
      pem: rsa.privateKey.export({
        format: "pem",
        type: "pkcs8",
        cipher: "aes-256-cbc",
        passphrase: "passphrase",
      }).toString(),
    },
    {
      name: "an encrypted PKCS#1 private key",
      pem: rsa.privateKey.export({
        format: "pem",
        type: "pkcs1",
        cipher: "aes-256-cbc",
        passphrase: "passphrase",
      }).toString(),
    },
  ] as const;
  for (const c of rejected) {
    it(`refuses ${c.name} with ERR_CRYPTO_INVALID_KEY`, () => {
      assert.throws(() => parseRsaKey(c.pem), INVALID_KEY);
    });
  }

  it("never quotes the key in its messages", () => {
    for (const c of rejected) {
      assert.throws(() => parseRsaKey(c.pem), (error: unknown) => {
        assert.ok(error instanceof Error);
        assert.match(error.message, /^Cannot use the RSA key: /);
        for (const line of pemLines(c.pem)) {
          assert.ok(!error.message.includes(line), `${c.name}: ${error.message}`);
        }
        return true;
      });
    }
  });

  it("says why a small key is refused", () => {
    const pem = toPem(small.publicKey, "spki");
    assert.throws(() => parseRsaKey(pem), {
      message: "Cannot use the RSA key: it has 1024 bits, and at least 2048 are needed",
    });
  });

  it("refuses a value that is not a string with TypeError", () => {
    assert.throws(() => parseRsaKey(rsa.publicKey as unknown as string), { name: "TypeError" });
  });
});

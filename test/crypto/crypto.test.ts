import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, it } from "node:test";
import { bytesEqual } from "../../lib/crypto/timing_safe_equal.ts";
import {
  CryptoError,
  nameUuid,
  pooledRandom,
  sha256Hex,
  timingSafeEqual,
  uuidV4,
} from "../../lib/crypto/mod.ts";
import { decodeBase64Url, encodeBase64Url } from "../../lib/crypto/base64url.ts";
import { isUuid, URL_NAMESPACE } from "../../lib/crypto/name_uuid.ts";

const DNS_NAMESPACE = "6ba7b810-9dad-11d1-80b4-00c04fd430c8";

describe("sha256Hex()", () => {
  const cases = [
    {
      name: "hashes the empty string (FIPS 180-2 vector)",
      input: "",
      expected: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    },
    {
      name: "hashes 'abc' (FIPS 180-2 vector)",
      input: "abc",
      expected: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    },
    {
      name: "hashes the 448-bit message (FIPS 180-2 vector)",
      input: "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
      expected: "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    },
  ] as const;
  for (const c of cases) it(c.name, () => assert.equal(sha256Hex(c.input), c.expected));

  it("hashes bytes like the same text in UTF-8", () => {
    assert.equal(sha256Hex(new TextEncoder().encode("héllo")), sha256Hex("héllo"));
  });

  it("gives 64 lower-case hex digits", () => {
    assert.match(sha256Hex("anything"), /^[0-9a-f]{64}$/);
  });
});

describe("timingSafeEqual()", () => {
  const cases = [
    { name: "is true for equal strings", a: "secret", b: "secret", expected: true },
    { name: "is true for two empty strings", a: "", b: "", expected: true },
    {
      name: "is false for different strings of the same length",
      a: "secret",
      b: "secreT",
      expected: false,
    },
    {
      name: "is false for strings of different lengths",
      a: "secret",
      b: "secrets",
      expected: false,
    },
    { name: "is false for a prefix", a: "", b: "a", expected: false },
    { name: "is true for equal non-ASCII strings", a: "clé-ü-🔑", b: "clé-ü-🔑", expected: true },
    { name: "is false for non-ASCII strings that differ", a: "clé", b: "cle", expected: false },
    { name: "is false when only the UTF-8 lengths agree", a: "é", b: "ab", expected: false },
    {
      name: "is false for a difference in the first unit only",
      a: "Xsecret",
      b: "ysecret",
      expected: false,
    },
    {
      name: "is false for strings differing in a high bit only",
      a: "a\u0161",
      b: "a\u0061",
      expected: false,
    },
    {
      name: "is false for different lone surrogates (which UTF-8 would make alike)",
      a: "x\ud800",
      b: "x\udbff",
      expected: false,
    },
  ] as const;
  for (const c of cases) it(c.name, () => assert.equal(timingSafeEqual(c.a, c.b), c.expected));
  it("compares through node:crypto's timingSafeEqual, not a JavaScript loop", () => {
    const source = readFileSync(
      new URL("../../lib/crypto/timing_safe_equal.ts", import.meta.url),
      "utf8",
    );
    assert.match(source, /import \{[^}]*timingSafeEqual as equalBuffers[^}]*\} from "node:crypto"/);
    assert.doesNotMatch(source, /\bfor \(/, "no comparison loop of its own");
  });
});

describe("nameUuid()", () => {
  it("matches the RFC 9562 version 5 vector for www.example.com in the DNS namespace", () => {
    const uuid = nameUuid("www.example.com", { namespace: DNS_NAMESPACE });
    assert.equal(uuid, "2ed6657d-e927-568b-95e1-2665a8aea6a2");
  });

  it("matches an independently computed URL-namespace UUID", () => {
    // Python: uuid.uuid5(uuid.NAMESPACE_URL, "https://doi.org/10.25976/abcd-ef12")
    const uuid = nameUuid("https://doi.org/10.25976/abcd-ef12");
    assert.equal(uuid, "b15c44f2-3a5b-577e-bcd7-404f2c7ed411");
  });

  it("is deterministic", () => {
    assert.equal(nameUuid("https://example.org/a"), nameUuid("https://example.org/a"));
  });

  it("gives different names different UUIDs", () => {
    assert.notEqual(nameUuid("https://example.org/a"), nameUuid("https://example.org/b"));
  });

  it("gives the same name different UUIDs in different namespaces", () => {
    assert.notEqual(nameUuid("x", { namespace: DNS_NAMESPACE }), nameUuid("x"));
  });

  it("uses the URL namespace by default", () => {
    const explicit = nameUuid("https://example.org/", { namespace: URL_NAMESPACE });
    assert.equal(nameUuid("https://example.org/"), explicit);
  });

  it("accepts an upper-case namespace", () => {
    assert.equal(
      nameUuid("www.example.com", { namespace: DNS_NAMESPACE.toUpperCase() }),
      "2ed6657d-e927-568b-95e1-2665a8aea6a2",
    );
  });

  it("sets the version nibble to 5 and the variant bits to 10", () => {
    for (const name of ["", "a", "https://example.org/x", "é🔑"]) {
      const uuid = nameUuid(name);
      assert.equal(uuid[14], "5", `version of ${uuid}`);
      assert.ok("89ab".includes(uuid[19] ?? ""), `variant of ${uuid}`);
    }
  });

  it("gives a lower-case UUID", () => {
    const uuid = nameUuid("Upper Case Name");
    assert.equal(uuid, uuid.toLowerCase());
    assert.equal(isUuid(uuid), true);
  });

  const badNamespaces = [
    { name: "refuses an empty namespace", namespace: "" },
    {
      name: "refuses a namespace that is not hex",
      namespace: "zba7b810-9dad-11d1-80b4-00c04fd430c8",
    },
    { name: "refuses a namespace without dashes", namespace: "6ba7b8109dad11d180b400c04fd430c8" },
    { name: "refuses a namespace with surrounding braces", namespace: `{${DNS_NAMESPACE}}` },
  ] as const;
  for (const c of badNamespaces) {
    it(`${c.name} with TypeError`, () => {
      assert.throws(() => nameUuid("x", { namespace: c.namespace }), { name: "TypeError" });
    });
  }
});

describe("isUuid()", () => {
  const cases = [
    { name: "accepts a lower-case UUID", text: DNS_NAMESPACE, expected: true },
    { name: "accepts an upper-case UUID", text: DNS_NAMESPACE.toUpperCase(), expected: true },
    { name: "accepts the nil UUID", text: "00000000-0000-0000-0000-000000000000", expected: true },
    {
      name: "refuses a UUID without dashes",
      text: "6ba7b8109dad11d180b400c04fd430c8",
      expected: false,
    },
    { name: "refuses a UUID in braces", text: `{${DNS_NAMESPACE}}`, expected: false },
    {
      name: "refuses a non-hex digit",
      text: "6ba7b810-9dad-11d1-80b4-00c04fd430cg",
      expected: false,
    },
    { name: "refuses a short group", text: "6ba7b810-9dad-11d1-80b4-00c04fd430c", expected: false },
    { name: "refuses trailing text", text: `${DNS_NAMESPACE}\n`, expected: false },
    { name: "refuses the empty string", text: "", expected: false },
  ] as const;
  for (const c of cases) it(c.name, () => assert.equal(isUuid(c.text), c.expected));
});

describe("CryptoError", () => {
  it("sets name and code and passes the cause through", () => {
    const cause = new Error("inner");
    const error = new CryptoError("ERR_CRYPTO_DECRYPT_FAILED", "Cannot decrypt", { cause });
    assert.ok(error instanceof Error);
    assert.equal(error.name, "CryptoError");
    assert.equal(error.code, "ERR_CRYPTO_DECRYPT_FAILED");
    assert.equal(error.cause, cause);
  });
});

describe("uuidV4()", () => {
  it("sets the version and variant bits of the random bytes", () => {
    assert.equal(
      uuidV4((size) => new Uint8Array(size).fill(0xff)),
      "ffffffff-ffff-4fff-bfff-ffffffffffff",
    );
    assert.equal(uuidV4((size) => new Uint8Array(size)), "00000000-0000-4000-8000-000000000000");
  });

  it("is a valid UUID for random input", () => {
    assert.equal(isUuid(uuidV4(pooledRandom())), true);
  });
});

describe("pooledRandom()", () => {
  it("hands out fresh bytes of the asked size, across pool refills", () => {
    const random = pooledRandom({ poolSize: 64 });
    const seen = new Set<string>();
    for (let i = 0; i < 100; i++) {
      const bytes = random(16);
      assert.equal(bytes.length, 16);
      seen.add(Buffer.from(bytes).toString("hex"));
    }
    assert.equal(seen.size, 100);
  });

  it("serves a request larger than the pool", () => {
    assert.equal(pooledRandom({ poolSize: 8 })(100).length, 100);
  });

  it("gives copies: changing one does not change the next", () => {
    const random = pooledRandom({ poolSize: 64 });
    const a = random(8);
    a.fill(0);
    assert.notDeepEqual(random(8), new Uint8Array(8));
  });
});

describe("bytesEqual()", () => {
  it("compares every byte, lengths first", () => {
    assert.equal(bytesEqual(Uint8Array.of(1, 2, 3), Uint8Array.of(1, 2, 3)), true);
    assert.equal(bytesEqual(Uint8Array.of(9, 2, 3), Uint8Array.of(1, 2, 3)), false);
    assert.equal(bytesEqual(Uint8Array.of(1, 2, 3), Uint8Array.of(1, 2, 4)), false);
    assert.equal(bytesEqual(Uint8Array.of(1, 2), Uint8Array.of(1, 2, 3)), false);
    assert.equal(bytesEqual(new Uint8Array(0), new Uint8Array(0)), true);
  });
});

describe("encodeBase64Url() and decodeBase64Url()", () => {
  it("encode without padding in the URL alphabet, and decode back", () => {
    const bytes = Uint8Array.of(0xfb, 0xff, 0xbf, 0x00, 0x10);
    assert.equal(encodeBase64Url(bytes), "-_-_ABA");
    assert.deepEqual(decodeBase64Url("-_-_ABA"), bytes);
    assert.deepEqual(decodeBase64Url("-_-_ABA="), bytes);
  });

  it("encode a view of a larger buffer by its own bytes only", () => {
    const whole = Uint8Array.of(1, 2, 3, 4, 5, 6);
    assert.equal(encodeBase64Url(whole.subarray(2, 5)), encodeBase64Url(Uint8Array.of(3, 4, 5)));
  });
});

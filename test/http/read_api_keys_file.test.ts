import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { sha256Hex } from "../../lib/crypto/mod.ts";
import { readApiKeysFile } from "../../lib/http/mod.ts";
import { assertConfigError } from "../_helpers/config.ts";

const HASH = sha256Hex("hashed-secret");

describe("readApiKeysFile()", () => {
  const file = JSON.stringify({
    api_keys: [
      { name: "demo", key: "demo-secret" },
      { name: "ops", key: `sha256:${HASH}` },
    ],
  });

  it("reads every key as a hash", () => {
    assert.deepEqual(readApiKeysFile(file, "keys.json").keys, [
      { name: "demo", hash: sha256Hex("demo-secret") },
      { name: "ops", hash: HASH },
    ]);
  });

  it("reports plain keys by name, and not sha256 ones", () => {
    assert.deepEqual(readApiKeysFile(file, "keys.json").plain, new Map([["demo", "demo-secret"]]));
  });

  it("does not report a sha256 key with surrounding spaces as plain", () => {
    const text = JSON.stringify({ api_keys: [{ name: "ops", key: ` sha256:${HASH} ` }] });
    const result = readApiKeysFile(text, "keys.json");
    assert.deepEqual(result.keys, [{ name: "ops", hash: HASH }]);
    assert.equal(result.plain.size, 0);
  });

  it("reads an empty key list", () => {
    assert.deepEqual(readApiKeysFile('{"api_keys": []}', "keys.json"), {
      keys: [],
      plain: new Map(),
    });
  });

  const invalid = [
    { name: "refuses invalid JSON", text: "{api_keys:" },
    { name: "refuses a top-level array", text: "[]" },
    { name: "refuses a top-level null", text: "null" },
    { name: "refuses an object without api_keys", text: '{"keys": []}' },
    {
      name: "refuses api_keys that is not an array",
      text: '{"api_keys": {"name": "a", "key": "b"}}',
    },
    { name: "refuses an entry without a name", text: '{"api_keys": [{"key": "k"}]}' },
    {
      name: "refuses an entry with an empty name",
      text: '{"api_keys": [{"name": "", "key": "k"}]}',
    },
    { name: "refuses an entry without a key", text: '{"api_keys": [{"name": "a"}]}' },
    {
      name: "refuses a key that is not a string",
      text: '{"api_keys": [{"name": "a", "key": 42}]}',
    },
    { name: "refuses an entry that is not an object", text: '{"api_keys": ["a"]}' },
    { name: "refuses a null entry", text: '{"api_keys": [null]}' },
    { name: "refuses an empty key", text: '{"api_keys": [{"name": "a", "key": ""}]}' },
    {
      name: "refuses a malformed sha256 key",
      text: '{"api_keys": [{"name": "a", "key": "sha256:abc"}]}',
    },
  ] as const;
  for (const c of invalid) {
    it(`${c.name} with a ConfigError for API_KEYS_FILE naming the file`, () => {
      const file = "/etc/tributary/keys.json";
      assertConfigError(() => readApiKeysFile(c.text, file), "API_KEYS_FILE", file);
    });
  }
});

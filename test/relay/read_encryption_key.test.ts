import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { readEncryptionKey } from "../../lib/relay/read_encryption_key.ts";

const { publicKey, privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const PUBLIC_PEM = publicKey.export({ type: "spki", format: "pem" }).toString();
const PRIVATE_PEM = privateKey.export({ type: "pkcs8", format: "pem" }).toString();

describe("readEncryptionKey()", () => {
  it("reads nothing from an empty setting", async () => {
    assert.equal(await readEncryptionKey(""), undefined);
  });

  it("reads a PEM given inline, with \\n escapes as an environment variable holds them", async () => {
    const key = await readEncryptionKey(PUBLIC_PEM.trim().replaceAll("\n", "\\n"));
    assert.ok(key !== undefined);
  });

  it("reads the public half of a private key from a file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tributary-key-"));
    writeFileSync(join(dir, "key.pem"), PRIVATE_PEM);
    assert.ok((await readEncryptionKey(join(dir, "key.pem"))) !== undefined);
  });

  it("names ENCRYPTION_KEY for text that is no RSA key", async () => {
    await assert.rejects(
      readEncryptionKey("-----BEGIN PUBLIC KEY-----\\nnope\\n-----END PUBLIC KEY-----"),
      { name: "ConfigError", variable: "ENCRYPTION_KEY" },
    );
  });

  it("names ENCRYPTION_KEY and the path for a path that cannot be read", async () => {
    await assert.rejects(readEncryptionKey("/nonexistent/key.pem"), {
      name: "ConfigError",
      variable: "ENCRYPTION_KEY",
      message: /\/nonexistent\/key\.pem.*ENOENT/,
    });
  });

  it("does not repeat a private key pasted without its PEM lines", async () => {
    const body = PRIVATE_PEM.split("\n").filter((line) => line !== "" && !line.startsWith("-----"))
      .join("");
    await assert.rejects(readEncryptionKey(body), (error: unknown) => {
      assert.equal((error as { variable?: string }).variable, "ENCRYPTION_KEY");
      const message = (error as Error).message;
      assert.match(
        message,
        /neither a PEM key .* nor the path of a file that can be read \((ENOENT|ENAMETOOLONG)\); its value is not shown/,
      );
      assert.equal(message.includes(body.slice(40, 80)), false, message);
      return true;
    });
  });
});

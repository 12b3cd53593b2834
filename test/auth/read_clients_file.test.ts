import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readClientsFile } from "../../lib/auth/mod.ts";
import { sha256Hex } from "../../lib/crypto/mod.ts";
import { assertConfigError } from "../_helpers/config.ts";

const HASH = sha256Hex("hashed-secret");

describe("readClientsFile()", () => {
  const file = JSON.stringify([
    {
      client_id: "backend",
      client_secret: "backend-secret",
      grant_types: ["client_credentials"],
      scopes: ["SignUp"],
    },
    {
      client_id: "ops",
      client_secret: `sha256:${HASH}`,
      grant_types: ["client_credentials"],
      scopes: ["SignUp"],
    },
    { client_id: "app", grant_types: ["password", "refresh_token"], scopes: ["UserActivity"] },
  ]);

  it("reads secrets as hashes and public clients without one", () => {
    const { clients } = readClientsFile(file, "clients.json");
    assert.deepEqual(clients.map((c) => [c.id, c.secretHash]), [
      ["backend", sha256Hex("backend-secret")],
      ["ops", HASH],
      ["app", undefined],
    ]);
  });

  it("reports plain secrets by client, and not sha256 ones", () => {
    assert.deepEqual([...readClientsFile(file, "clients.json").plain], [[
      "backend",
      "backend-secret",
    ]]);
  });

  it("names CLIENTS_FILE and the file for invalid JSON", () => {
    assertConfigError(
      () => readClientsFile("[{", "my-clients.json"),
      "CLIENTS_FILE",
      "my-clients.json",
    );
  });

  it("names the entry at fault", () => {
    const bad = JSON.stringify([{ client_id: "x", grant_types: ["implicit"], scopes: [] }]);
    assertConfigError(() => readClientsFile(bad, "c.json"), "CLIENTS_FILE", "client 1");
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ENTITIES, ENTITY_NAMES, SyncError } from "../../lib/sync/mod.ts";
import { fieldOf, isEntityName, LIST_ENTITY_NAMES } from "../../lib/sync/schema.ts";

describe("ENTITIES", () => {
  it("defines me, messages and teams, each keyed by uuid", () => {
    assert.deepEqual(Object.keys(ENTITIES), [...ENTITY_NAMES]);
    assert.deepEqual(LIST_ENTITY_NAMES, ["messages", "teams"]);
    for (const name of ENTITY_NAMES) {
      const entity = ENTITIES[name];
      assert.equal(entity.name, name);
      assert.equal(entity.singleton, name === "me");
      assert.equal(fieldOf(entity, entity.key)?.type, "uuid");
    }
  });

  it("gives every field either required or a default, never both", () => {
    for (const name of ENTITY_NAMES) {
      for (const field of ENTITIES[name].fields) {
        assert.notEqual(field.required, Object.hasOwn(field, "default"), `${name}.${field.name}`);
        assert.ok(field.description.length > 0);
      }
    }
  });

  it("lists the fields of the specification", () => {
    const fields = (name: "me" | "messages" | "teams"): string[] =>
      ENTITIES[name].fields.map((field) => field.name);
    assert.deepEqual(fields("me"), ["uuid", "username", "notify_language"]);
    assert.deepEqual(fields("messages"), ["uuid", "subject", "body", "read", "sent_at"]);
    assert.deepEqual(fields("teams"), ["uuid", "name", "color", "archived"]);
    assert.equal(fieldOf(ENTITIES.me, "username")?.readOnly, true);
    assert.deepEqual(fieldOf(ENTITIES.me, "notify_language")?.values, [
      "en",
      "fr",
      "ru",
      "es",
      "de",
    ]);
    assert.equal(fieldOf(ENTITIES.teams, "nothing"), undefined);
  });
});

describe("types.ts", () => {
  it("holds types only, nothing at run time", async () => {
    assert.deepEqual(Object.keys(await import("../../lib/sync/types.ts")), []);
  });
});

describe("isEntityName()", () => {
  it("accepts only the entity names", () => {
    assert.deepEqual(["me", "messages", "teams", "accounts", "Me", ""].map(isEntityName), [
      true,
      true,
      true,
      false,
      false,
      false,
    ]);
  });
});

describe("SyncError", () => {
  it("carries a code, the patch problems, frozen, and a cause", () => {
    const cause = new Error("inner");
    const error = new SyncError("ERR_SYNC_INVALID_PATCH", "Cannot accept patch: 1 problem", {
      errors: [{ message: "Expected a UUID", field: "objects.messages[0].uuid" }],
      cause,
    });
    assert.ok(error instanceof Error);
    assert.equal(error.name, "SyncError");
    assert.equal(error.code, "ERR_SYNC_INVALID_PATCH");
    assert.deepEqual(error.errors, [{
      message: "Expected a UUID",
      field: "objects.messages[0].uuid",
    }]);
    assert.ok(Object.isFrozen(error.errors));
    assert.equal(error.cause, cause);
    const plain = new SyncError(
      "ERR_SYNC_UNKNOWN_TICKET",
      "Cannot find ticket x: it was never issued",
    );
    assert.deepEqual(plain.errors, []);
    assert.equal("cause" in plain, false);
  });
});

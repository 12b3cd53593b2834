import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  checkPatch,
  type ObjectErrors,
  parsePatch,
  RevisionLog,
  type SyncObject,
  type SyncPatch,
} from "../../lib/sync/mod.ts";

const USER = { uuid: "aaaaaaaa-0000-4000-8000-000000000001", username: "alice" };
const ME: SyncObject = { uuid: USER.uuid, username: USER.username, notify_language: null };
const M1 = "10000000-0000-4000-8000-000000000001";
const M2 = "10000000-0000-4000-8000-000000000002";
const T1 = "20000000-0000-4000-8000-000000000001";
const T2 = "20000000-0000-4000-8000-000000000002";
const T3 = "20000000-0000-4000-8000-000000000003";
const MISSING = "30000000-0000-4000-8000-000000000009";

const MESSAGE = { uuid: M1, subject: "Hi", body: "", read: false, sent_at: "2024-01-01T00:00:00Z" };

/** A log holding a message, an active team "Core" and an archived team "Old". */
function setup(): RevisionLog {
  let n = 0;
  const log = new RevisionLog({ now: () => 0, uuid: () => `rev-${++n}`, me: ME });
  log.commit([
    { entity: "messages", key: M1, value: MESSAGE },
    { entity: "teams", key: T1, value: { uuid: T1, name: "Core", color: null, archived: false } },
    { entity: "teams", key: T2, value: { uuid: T2, name: "Old", color: null, archived: true } },
  ]);
  return log;
}

/** Errors without their message texts, which tests do not pin down. */
function summary(errors: readonly ObjectErrors[]): unknown[] {
  return errors.map((error) => {
    for (const message of error.messages) assert.ok(message.message.length > 0);
    return { ...error, messages: error.messages.map(({ level, code }) => ({ level, code })) };
  });
}

function check(body: unknown, log = setup()): unknown[] {
  return summary(checkPatch(parsePatch(body), log, USER));
}

describe("checkPatch()", () => {
  it("accepts a patch that follows the rules", () => {
    assert.deepEqual(
      check({
        objects: {
          me: { uuid: USER.uuid, username: "alice", notify_language: "de" },
          messages: [{ ...MESSAGE, read: true }, {
            uuid: M2,
            subject: "New",
            body: "b",
            sent_at: "2024-01-02T00:00:00Z",
          }],
          teams: [{ uuid: T3, name: "old" }],
        },
        deleted_objects: { messages: [] },
      }),
      [],
    );
  });

  it("refuses a me of another user as access_denied", () => {
    assert.deepEqual(check({ objects: { me: { uuid: MISSING, notify_language: "en" } } }), [
      {
        section: "objects",
        entity: "me",
        key: null,
        attribute: "uuid",
        messages: [{ level: "user_error", code: "access_denied" }],
      },
    ]);
  });

  it("refuses a change of the read-only username as input", () => {
    assert.deepEqual(check({ objects: { me: { username: "mallory" } } }), [
      {
        section: "objects",
        entity: "me",
        key: null,
        attribute: "username",
        messages: [{ level: "user_error", code: "input" }],
      },
    ]);
    assert.deepEqual(check({ objects: { me: { username: "alice" } } }), []);
  });

  it("refuses deleting the account as access_denied", () => {
    assert.deepEqual(check({ deleted_objects: { me: USER.uuid } }), [
      {
        section: "deleted_objects",
        entity: "me",
        key: null,
        attribute: null,
        messages: [{ level: "user_error", code: "access_denied" }],
      },
    ]);
  });

  it("refuses deleting objects that do not exist as object_not_found", () => {
    assert.deepEqual(check({ deleted_objects: { messages: [M1, MISSING], teams: [MISSING] } }), [
      {
        section: "deleted_objects",
        entity: "messages",
        key: { uuid: MISSING },
        attribute: null,
        messages: [{ level: "user_error", code: "object_not_found" }],
      },
      {
        section: "deleted_objects",
        entity: "teams",
        key: { uuid: MISSING },
        attribute: null,
        messages: [{ level: "user_error", code: "object_not_found" }],
      },
    ]);
  });

  it("refuses objects lacking a required field, new or not, as input_data", () => {
    assert.deepEqual(
      check({
        objects: {
          messages: [
            { uuid: M2, body: "", sent_at: "2024-01-01T00:00:00Z" },
            { uuid: M1, subject: "Hi", body: "" },
          ],
          teams: [{ uuid: T3 }],
        },
      }),
      [
        {
          section: "objects",
          entity: "messages",
          key: { uuid: M2 },
          attribute: "subject",
          messages: [{ level: "dev_error", code: "input_data" }],
        },
        {
          section: "objects",
          entity: "messages",
          key: { uuid: M1 },
          attribute: "sent_at",
          messages: [{ level: "dev_error", code: "input_data" }],
        },
        {
          section: "objects",
          entity: "teams",
          key: { uuid: T3 },
          attribute: "name",
          messages: [{ level: "dev_error", code: "input_data" }],
        },
      ],
    );
  });

  it("refuses a key listed twice or in both sections, grouping messages of one object", () => {
    assert.deepEqual(
      check({
        objects: { messages: [MESSAGE, MESSAGE] },
        deleted_objects: { messages: [M1], teams: [T1, { uuid: T1 }] },
      }),
      [
        {
          section: "objects",
          entity: "messages",
          key: { uuid: M1 },
          attribute: null,
          messages: [
            { level: "dev_error", code: "input_data" },
            { level: "dev_error", code: "input_data" },
          ],
        },
        {
          section: "deleted_objects",
          entity: "teams",
          key: { uuid: T1 },
          attribute: null,
          messages: [{ level: "dev_error", code: "input_data" }],
        },
      ],
    );
  });

  describe("team names", () => {
    const clash = (uuid: string): unknown => ({
      section: "objects",
      entity: "teams",
      key: { uuid },
      attribute: "name",
      messages: [{ level: "user_error", code: "input" }],
    });

    it("refuses a new team named like an active one, in any case", () => {
      assert.deepEqual(check({ objects: { teams: [{ uuid: T3, name: "CORE" }] } }), [clash(T3)]);
    });

    it("accepts a name taken only by an archived team, or a new archived team", () => {
      assert.deepEqual(check({ objects: { teams: [{ uuid: T3, name: "Old" }] } }), []);
      assert.deepEqual(
        check({ objects: { teams: [{ uuid: T3, name: "Core", archived: true }] } }),
        [],
      );
    });

    it("refuses two new teams with the same name", () => {
      const M3 = "20000000-0000-4000-8000-000000000004";
      assert.deepEqual(
        check({ objects: { teams: [{ uuid: T3, name: "New" }, { uuid: M3, name: "new" }] } }),
        [clash(T3), clash(M3)],
      );
    });

    it("refuses renaming or unarchiving a team into a clash", () => {
      assert.deepEqual(check({ objects: { teams: [{ uuid: T2, name: "Core" }] } }), [clash(T2)]);
      const log = setup();
      log.commit([{
        entity: "teams",
        key: T3,
        value: { uuid: T3, name: "old", color: null, archived: false },
      }]);
      assert.deepEqual(
        check({ objects: { teams: [{ uuid: T2, name: "Old", archived: false }] } }, log),
        [clash(T2)],
      );
    });

    it("accepts a clash the same patch resolves, by deleting or renaming the other team", () => {
      assert.deepEqual(
        check({
          objects: { teams: [{ uuid: T3, name: "Core" }] },
          deleted_objects: { teams: [T1] },
        }),
        [],
      );
      assert.deepEqual(
        check({ objects: { teams: [{ uuid: T3, name: "Core" }, { uuid: T1, name: "Core 2" }] } }),
        [],
      );
    });

    it("does not blame a team sent unchanged for a clash made before", () => {
      const log = setup();
      log.commit([{
        entity: "teams",
        key: T3,
        value: { uuid: T3, name: "core", color: null, archived: false },
      }]);
      assert.deepEqual(
        check({ objects: { teams: [{ uuid: T3, name: "core", color: "#000000" }] } }, log),
        [],
      );
    });
  });

  it("reports the missing fields of a me that no longer exists", () => {
    const log = setup();
    log.commit([{ entity: "me", key: USER.uuid, value: null }]);
    assert.deepEqual(check({ objects: { me: { notify_language: "en" } } }, log), [
      {
        section: "objects",
        entity: "me",
        key: null,
        attribute: "uuid",
        messages: [{ level: "dev_error", code: "input_data" }],
      },
      {
        section: "objects",
        entity: "me",
        key: null,
        attribute: "username",
        messages: [{ level: "dev_error", code: "input_data" }],
      },
    ]);
  });

  it("reports a hand-built object without a key", () => {
    const patch: SyncPatch = {
      objects: { me: null, messages: [{ subject: "x" }], teams: [{ name: "Core" }] },
      deleted_objects: { me: null, messages: [], teams: [] },
      serial: null,
      base_revision: null,
    };
    assert.deepEqual(summary(checkPatch(patch, setup(), USER)), [
      {
        section: "objects",
        entity: "messages",
        key: null,
        attribute: "uuid",
        messages: [{ level: "dev_error", code: "input_data" }],
      },
      {
        section: "objects",
        entity: "teams",
        key: null,
        attribute: "uuid",
        messages: [{ level: "dev_error", code: "input_data" }],
      },
    ]);
  });
});

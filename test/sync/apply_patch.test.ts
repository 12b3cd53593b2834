import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  applyPatch,
  checkPatch,
  parsePatch,
  RevisionLog,
  type SyncObject,
} from "../../lib/sync/mod.ts";

const USER = { uuid: "aaaaaaaa-0000-4000-8000-000000000001", username: "alice" };
const ME: SyncObject = { uuid: USER.uuid, username: USER.username, notify_language: null };
const M1 = "10000000-0000-4000-8000-000000000001";
const M2 = "10000000-0000-4000-8000-000000000002";
const T1 = "20000000-0000-4000-8000-000000000001";
const MISSING = "30000000-0000-4000-8000-000000000009";
const MESSAGE = { uuid: M1, subject: "Hi", body: "", read: true, sent_at: "2024-01-01T00:00:00Z" };

function setup(): RevisionLog {
  let n = 0;
  const log = new RevisionLog({ now: () => 0, uuid: () => `rev-${++n}`, me: ME });
  log.commit([{ entity: "messages", key: M1, value: MESSAGE }]);
  return log;
}

/** Parses, checks and applies a body as the service does. */
function submit(log: RevisionLog, body: unknown): ReturnType<typeof applyPatch> {
  const patch = parsePatch(body);
  assert.deepEqual(checkPatch(patch, log, USER), []);
  return applyPatch(patch, log);
}

describe("applyPatch()", () => {
  it("commits the whole patch as one revision, filling defaults", () => {
    const log = setup();
    const base = log.head;
    const revision = submit(log, {
      objects: {
        me: { notify_language: "es" },
        messages: [{ uuid: M2, subject: "New", body: "text", sent_at: "2024-01-02T00:00:00Z" }],
        teams: [{ uuid: T1, name: "Core" }],
      },
      deleted_objects: { messages: [M1] },
    });
    assert.equal(revision?.serial, base.serial + 1);
    assert.equal(log.head, revision);
    assert.deepEqual(log.diff(base), {
      base_revision: base.uuid,
      revision: log.head.uuid,
      serial: 3,
      created_at: "1970-01-01T00:00:00Z",
      deleted_objects: { me: null, messages: [M1], teams: [] },
      objects: {
        me: { uuid: USER.uuid, username: "alice", notify_language: "es" },
        messages: [{
          uuid: M2,
          subject: "New",
          body: "text",
          read: false,
          sent_at: "2024-01-02T00:00:00Z",
        }],
        teams: [{ uuid: T1, name: "Core", color: null, archived: false }],
      },
    });
  });

  it("commits nothing for a patch that changes nothing", () => {
    const log = setup();
    const head = log.head;
    assert.equal(
      submit(log, {
        objects: { me: { uuid: USER.uuid, notify_language: null }, messages: [MESSAGE] },
      }),
      undefined,
    );
    assert.equal(submit(log, { objects: {} }), undefined);
    assert.equal(
      submit(log, { deleted_objects: { messages: [] }, serial: 4, base_revision: null }),
      undefined,
    );
    assert.equal(log.head, head);
  });

  it("commits only the objects that differ", () => {
    const log = setup();
    const base = log.head;
    submit(log, {
      objects: {
        messages: [MESSAGE, { uuid: M2, subject: "x", body: "", sent_at: "2024-01-01T00:00:00Z" }],
      },
    });
    assert.deepEqual(log.diff(base)?.objects.messages.map((m) => m["uuid"]), [M2]);
  });

  it("treats objects as complete: an absent field takes its default again", () => {
    const log = setup();
    const { read: _read, ...unread } = MESSAGE;
    submit(log, { objects: { messages: [unread] } });
    assert.equal(log.get("messages", M1)?.["read"], false);
  });

  it("rewrites complete an object stored with fewer fields", () => {
    const log = setup();
    const { read: _read, ...partial } = MESSAGE;
    log.commit([{ entity: "messages", key: M2, value: { ...partial, uuid: M2 } }]);
    const base = log.head;
    submit(log, { objects: { messages: [{ ...partial, uuid: M2 }] } });
    assert.deepEqual(log.diff(base)?.objects.messages, [{ ...MESSAGE, uuid: M2, read: false }]);
  });

  it("keeps a read-only field the patch leaves out", () => {
    const log = setup();
    submit(log, { objects: { me: { notify_language: "ru" } } });
    assert.deepEqual(log.me, { uuid: USER.uuid, username: "alice", notify_language: "ru" });
  });

  it("changes nothing when a patch is rejected: the rules run before any commit", () => {
    const log = setup();
    const head = log.head;
    const patch = parsePatch({
      objects: {
        messages: [{ uuid: M2, subject: "valid", body: "", sent_at: "2024-01-01T00:00:00Z" }],
      },
      deleted_objects: { messages: [MISSING] },
    });
    assert.equal(checkPatch(patch, log, USER).length, 1);
    assert.throws(() => applyPatch(patch, log), TypeError);
    assert.equal(log.head, head);
    assert.equal(log.get("messages", M2), undefined);
  });

  it("throws a TypeError for a me when the context has none", () => {
    const log = setup();
    log.commit([{ entity: "me", key: USER.uuid, value: null }]);
    const head = log.head;
    assert.throws(
      () => applyPatch(parsePatch({ objects: { me: { notify_language: "en" } } }), log),
      TypeError,
    );
    assert.equal(log.head, head);
  });

  it("throws a TypeError for a hand-built object without a key", () => {
    const log = setup();
    const patch = {
      objects: {
        me: null,
        messages: [{ subject: "x", body: "", sent_at: "2024-01-01T00:00:00Z" }],
        teams: [],
      },
      deleted_objects: { me: null, messages: [], teams: [] },
      serial: null,
      base_revision: null,
    };
    assert.throws(() => applyPatch(patch, log), TypeError);
  });

  const unappliable: { name: string; body: unknown }[] = [
    { name: "deletes me", body: { deleted_objects: { me: USER.uuid } } },
    { name: "deletes a missing object", body: { deleted_objects: { teams: [MISSING] } } },
    {
      name: "lacks a required field",
      body: {
        objects: { messages: [{ uuid: M2, subject: "x" }], teams: [{ uuid: T1, name: "t" }] },
      },
    },
    {
      name: "sends another user's me",
      body: {
        objects: { me: { uuid: MISSING, username: "bob" }, teams: [{ uuid: T1, name: "t" }] },
      },
    },
  ];
  for (const c of unappliable) {
    it(`throws a TypeError and commits nothing for a patch that ${c.name}`, () => {
      const log = setup();
      const before = log.snapshot();
      const patch = parsePatch(c.body);
      assert.ok(checkPatch(patch, log, USER).length > 0);
      assert.throws(() => applyPatch(patch, log), TypeError);
      assert.equal(log.snapshot(), before);
    });
  }
});

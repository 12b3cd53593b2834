import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { applyDiff, RevisionLog, type SyncObject } from "../../lib/sync/mod.ts";

const ME: SyncObject = {
  uuid: "aaaaaaaa-0000-4000-8000-000000000001",
  username: "alice",
  notify_language: null,
};
const M1 = "10000000-0000-4000-8000-000000000001";
const M2 = "10000000-0000-4000-8000-000000000002";
const M3 = "10000000-0000-4000-8000-000000000003";

function message(uuid: string, subject: string): SyncObject {
  return { uuid, subject, body: "", read: false, sent_at: "2024-01-01T00:00:00Z" };
}

function setup(): RevisionLog {
  let n = 0;
  return new RevisionLog({ now: () => 1000 * n, uuid: () => `rev-${++n}`, me: ME });
}

describe("applyDiff()", () => {
  it("turns the base snapshot into the target snapshot", () => {
    const log = setup();
    log.commit([
      { entity: "messages", key: M2, value: message(M2, "two") },
      { entity: "messages", key: M3, value: message(M3, "three") },
    ]);
    const base = log.head;
    log.commit([
      { entity: "messages", key: M1, value: message(M1, "one") },
      { entity: "messages", key: M2, value: null },
      { entity: "messages", key: M3, value: message(M3, "three again") },
      { entity: "me", key: String(ME["uuid"]), value: { ...ME, notify_language: "fr" } },
    ]);
    const diff = log.diff(base) ?? assert.fail("expected a diff");
    assert.deepEqual(applyDiff(log.snapshot(base), diff), log.snapshot());
  });

  it("removes a deleted me", () => {
    const log = setup();
    const base = log.head;
    log.commit([{ entity: "me", key: String(ME["uuid"]), value: null }]);
    const diff = log.diff(base) ?? assert.fail("expected a diff");
    assert.equal(applyDiff(log.snapshot(base), diff).objects.me, null);
  });

  it("refuses a diff that starts elsewhere", () => {
    const log = setup();
    const base = log.head;
    log.commit([{ entity: "messages", key: M1, value: message(M1, "one") }]);
    const diff = log.diff(base) ?? assert.fail("expected a diff");
    assert.throws(() => applyDiff(log.snapshot(), diff), TypeError);
  });
});

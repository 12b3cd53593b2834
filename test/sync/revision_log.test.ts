import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { type Change, type Revision, RevisionLog, type SyncObject } from "../../lib/sync/mod.ts";
import { createPrng } from "../_helpers/prng.ts";

const ME: SyncObject = {
  uuid: "aaaaaaaa-0000-4000-8000-000000000001",
  username: "alice",
  notify_language: null,
};
const T0 = Date.UTC(2024, 2, 5, 6, 7, 8, 999);

function key(n: number): string {
  return `10000000-0000-4000-8000-${n.toString(16).padStart(12, "0")}`;
}

function message(n: number, subject = `Subject ${n}`): SyncObject {
  return { uuid: key(n), subject, body: "", read: false, sent_at: "2024-01-01T00:00:00Z" };
}

function team(n: number, name = `Team ${n}`): SyncObject {
  return { uuid: key(1000 + n), name, color: null, archived: false };
}

function put(value: SyncObject, entity: "messages" | "teams" = "messages"): Change {
  return { entity, key: String(value["uuid"]), value };
}

function remove(k: string, entity: "messages" | "teams" = "messages"): Change {
  return { entity, key: k, value: null };
}

/** A log on a hand-driven clock and a counting UUID source. */
function setup(): { log: RevisionLog; clock: { time: number } } {
  const clock = { time: T0 };
  let n = 0;
  const log = new RevisionLog({
    now: () => clock.time,
    uuid: () => `cccccccc-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`,
    me: ME,
  });
  return { log, clock };
}

function assertSyncError(fn: () => unknown, code: string): void {
  assert.throws(fn, { name: "SyncError", code });
}

describe("RevisionLog", () => {
  it("starts at serial 1 with me", () => {
    const { log } = setup();
    assert.deepEqual(log.head, {
      uuid: "cccccccc-0000-4000-8000-000000000001",
      serial: 1,
      createdAt: T0,
    });
    assert.deepEqual(log.snapshot(), {
      revision: "cccccccc-0000-4000-8000-000000000001",
      serial: 1,
      created_at: "2024-03-05T06:07:08Z",
      objects: { me: ME, messages: [], teams: [] },
    });
    assert.deepEqual(log.me, ME);
  });

  it("rejects a bad clock, UUID source or me", () => {
    const uuid = (): string => "x";
    assert.throws(() => new RevisionLog({ now: 5 as never, uuid, me: ME }), TypeError);
    assert.throws(() => new RevisionLog({ now: () => 0, uuid: null as never, me: ME }), TypeError);
    assert.throws(() => new RevisionLog({ now: () => 0, uuid, me: { username: "x" } }), TypeError);
    assert.throws(() => new RevisionLog({ now: () => 0, uuid, me: null as never }), TypeError);
    assert.throws(() => new RevisionLog({ now: () => Number.NaN, uuid, me: ME }), RangeError);
    assert.throws(() => new RevisionLog({ now: () => -1, uuid, me: ME }), RangeError);
    assert.throws(() => new RevisionLog({ now: () => 1e15, uuid, me: ME }), RangeError);
  });
});

describe("RevisionLog.commit()", () => {
  it("makes revisions with strictly increasing serials", () => {
    const { log, clock } = setup();
    const serials = [log.head.serial];
    for (let n = 0; n < 20; n++) {
      clock.time += 1000;
      serials.push(log.commit([put(message(n))]).serial);
    }
    assert.deepEqual(serials, Array.from({ length: 21 }, (_, i) => i + 1));
    assert.equal(log.head.serial, 21);
  });

  it("stamps created_at from the injected clock, UTC without milliseconds", () => {
    const { log, clock } = setup();
    clock.time = Date.UTC(2025, 11, 31, 23, 59, 59, 500);
    const revision = log.commit([put(message(1))]);
    assert.equal(revision.createdAt, clock.time);
    assert.equal(log.snapshot().created_at, "2025-12-31T23:59:59Z");
    assert.equal(
      log.diff(log.resolve("cccccccc-0000-4000-8000-000000000001"))?.created_at,
      "2025-12-31T23:59:59Z",
    );
  });

  it("never stamps a revision before the previous one when the clock steps back", () => {
    const { log, clock } = setup();
    clock.time = T0 - 60_000;
    assert.equal(log.commit([put(message(1))]).createdAt, T0);
  });

  it("applies several changes as one revision, the last change of a key winning", () => {
    const { log } = setup();
    const revision = log.commit([
      put(message(1)),
      put(message(2)),
      put(message(1, "again")),
      remove(key(2)),
    ]);
    assert.equal(revision.serial, 2);
    assert.deepEqual(log.snapshot().objects.messages, [message(1, "again")]);
  });

  it("stores frozen copies of the values", () => {
    const { log } = setup();
    const value = { ...message(1) };
    log.commit([put(value)]);
    value["subject"] = "changed by the caller";
    const stored = log.get("messages", key(1));
    assert.equal(stored?.["subject"], "Subject 1");
    assert.ok(Object.isFrozen(stored));
    assert.ok(Object.isFrozen(log.snapshot().objects.messages));
  });

  const valid = put(message(8));
  const malformed: { name: string; changes: unknown }[] = [
    { name: "no changes", changes: [] },
    { name: "not an array", changes: valid },
    { name: "a change that is not an object", changes: [valid, 42] },
    {
      name: "an unknown entity",
      changes: [valid, { entity: "accounts", key: key(1), value: null }],
    },
    {
      name: "a key that is not a string",
      changes: [valid, { entity: "messages", key: 1, value: null }],
    },
    {
      name: "a value whose uuid is not the key",
      changes: [valid, { entity: "messages", key: key(2), value: message(1) }],
    },
    {
      name: "a value that is an array",
      changes: [valid, { entity: "messages", key: key(1), value: [] }],
    },
    {
      name: "a field that is a number",
      changes: [valid, { entity: "messages", key: key(1), value: { uuid: key(1), n: 5 } }],
    },
    {
      name: "a field that is an object",
      changes: [valid, { entity: "messages", key: key(1), value: { uuid: key(1), o: {} } }],
    },
    {
      name: "a second me",
      changes: [valid, { entity: "me", key: key(9), value: { uuid: key(9), username: "bob" } }],
    },
  ];
  for (const c of malformed) {
    it(`throws a TypeError and changes nothing for ${c.name}`, () => {
      const { log } = setup();
      log.commit([put(message(7))]);
      const head = log.head;
      const before = log.snapshot();
      assert.throws(() => log.commit(c.changes as never), TypeError);
      assert.equal(log.head, head);
      assert.deepEqual(log.snapshot(), before);
      assert.equal(log.get("messages", key(8)), undefined);
    });
  }

  it("lets me be replaced by another key in one commit, or deleted", () => {
    const { log } = setup();
    const base = log.head;
    const other = { uuid: key(9), username: "alice", notify_language: "fr" };
    log.commit([{ entity: "me", key: String(ME["uuid"]), value: null }, {
      entity: "me",
      key: key(9),
      value: other,
    }]);
    assert.deepEqual(log.diff(base)?.objects.me, other);
    assert.equal(log.diff(base)?.deleted_objects.me, ME["uuid"]);
    const replaced = log.head;
    log.commit([{ entity: "me", key: key(9), value: null }]);
    assert.equal(log.me, null);
    assert.equal(log.snapshot().objects.me, null);
    assert.deepEqual(log.diff(replaced)?.deleted_objects, { me: key(9), messages: [], teams: [] });
    assert.deepEqual(log.snapshot(replaced).objects.me, other);
  });

  it("throws when the UUID source repeats an id, even a pruned one", () => {
    const clock = { time: T0 };
    const ids = ["r1", "r2", "r1", "r3", "r1"];
    const log = new RevisionLog({ now: () => clock.time, uuid: () => ids.shift() ?? "", me: ME });
    clock.time += 10;
    log.commit([put(message(1))]);
    assert.throws(() => log.commit([put(message(2))]), TypeError);
    log.commit([put(message(3))]);
    assert.equal(log.prune(T0 + 11), 2, "r1 and r2 both stopped being the head at T0 + 10");
    assert.equal(log.status("r1"), "pruned");
    assert.throws(() => log.commit([put(message(4))]), TypeError);
    assert.throws(() => log.commit([put(message(4))]), TypeError, "an empty id");
    assert.equal(log.head.uuid, "r3");
    assert.equal(log.get("messages", key(4)), undefined);
  });
});

describe("RevisionLog.revision()", () => {
  it("finds retained revisions by id and nothing else", () => {
    const { log, clock } = setup();
    clock.time += 5000;
    const second = log.commit([put(message(1))]);
    log.commit([put(message(2))]);
    assert.deepEqual(log.revision(second.uuid), second);
    assert.deepEqual(log.revision(log.head.uuid), log.head);
    assert.equal(log.revision("cccccccc-0000-4000-8000-0000000000ff"), undefined);
    assert.deepEqual(log.resolve(second.uuid), second);
  });
});

describe("RevisionLog.snapshot()", () => {
  it("lists objects sorted by uuid", () => {
    const { log } = setup();
    log.commit([
      put(message(3)),
      put(message(1)),
      put(team(2), "teams"),
      put(message(2)),
      put(team(1), "teams"),
    ]);
    const objects = log.snapshot().objects;
    assert.deepEqual(objects.messages.map((m) => m["uuid"]), [key(1), key(2), key(3)]);
    assert.deepEqual(objects.teams.map((t) => t["uuid"]), [key(1001), key(1002)]);
  });

  it("keeps the head's snapshot until the next commit", () => {
    const { log } = setup();
    const first = log.snapshot();
    assert.equal(log.snapshot(), first);
    assert.equal(log.snapshot(log.head), first);
    log.commit([put(message(1))]);
    assert.notEqual(log.snapshot(), first);
    assert.deepEqual(log.snapshot().objects.messages, [message(1)]);
  });

  it("rebuilds past revisions", () => {
    const { log, clock } = setup();
    const r1 = log.head;
    clock.time += 1000;
    const r2 = log.commit([put(message(1)), put(message(2))]);
    clock.time += 1000;
    const r3 = log.commit([put(message(1, "edited")), remove(key(2)), put(team(1), "teams")]);
    log.commit([remove(key(1)), {
      entity: "me",
      key: String(ME["uuid"]),
      value: { ...ME, notify_language: "de" },
    }]);
    assert.deepEqual(log.snapshot(r1).objects, { me: ME, messages: [], teams: [] });
    assert.deepEqual(log.snapshot(r2), {
      revision: r2.uuid,
      serial: 2,
      created_at: "2024-03-05T06:07:09Z",
      objects: { me: ME, messages: [message(1), message(2)], teams: [] },
    });
    assert.deepEqual(log.snapshot(r3).objects, {
      me: ME,
      messages: [message(1, "edited")],
      teams: [team(1)],
    });
    assert.deepEqual(log.snapshot().objects, {
      me: { ...ME, notify_language: "de" },
      messages: [],
      teams: [team(1)],
    });
  });

  it("refuses a revision of another log or with a wrong serial", () => {
    const { log } = setup();
    log.commit([put(message(1))]);
    assertSyncError(
      () => log.snapshot({ uuid: "elsewhere", serial: 1, createdAt: T0 }),
      "ERR_SYNC_UNKNOWN_REVISION",
    );
    assert.throws(() => log.snapshot({ ...log.head, serial: 1 }), TypeError);
  });
});

describe("RevisionLog.diff()", () => {
  it("lists changed objects and deleted keys in the API's shape", () => {
    const { log, clock } = setup();
    log.commit([put(message(1)), put(message(2)), put(team(1), "teams")]);
    const base = log.head;
    clock.time += 61_000;
    log.commit([put(message(1, "edited")), remove(key(2)), put(message(3))]);
    log.commit([put(team(2), "teams")]);
    assert.deepEqual(log.diff(base), {
      base_revision: base.uuid,
      revision: log.head.uuid,
      serial: 4,
      created_at: "2024-03-05T06:08:09Z",
      deleted_objects: { me: null, messages: [key(2)], teams: [] },
      objects: { me: null, messages: [message(1, "edited"), message(3)], teams: [team(2)] },
    });
  });

  it("is undefined from a revision to itself", () => {
    const { log } = setup();
    assert.equal(log.diff(log.head), undefined);
    log.commit([put(message(1))]);
    assert.equal(log.diff(log.head, log.head), undefined);
  });

  it("mentions nowhere an object created and deleted in between, yet moves to the target", () => {
    const { log } = setup();
    const base = log.head;
    log.commit([put(message(1))]);
    log.commit([remove(key(1))]);
    assert.deepEqual(log.diff(base), {
      base_revision: base.uuid,
      revision: log.head.uuid,
      serial: 3,
      created_at: "2024-03-05T06:07:08Z",
      deleted_objects: { me: null, messages: [], teams: [] },
      objects: { me: null, messages: [], teams: [] },
    });
  });

  it("lists a deleted and re-created object as changed, not deleted", () => {
    const { log } = setup();
    log.commit([put(message(1))]);
    const base = log.head;
    log.commit([remove(key(1))]);
    log.commit([put(message(1, "back"))]);
    assert.deepEqual(log.diff(base)?.objects.messages, [message(1, "back")]);
    assert.deepEqual(log.diff(base)?.deleted_objects.messages, []);
  });

  it("carries me only when it changed", () => {
    const { log } = setup();
    const base = log.head;
    log.commit([put(message(1))]);
    assert.equal(log.diff(base)?.objects.me, null);
    const me = { ...ME, notify_language: "ru" };
    log.commit([{ entity: "me", key: String(ME["uuid"]), value: me }]);
    assert.deepEqual(log.diff(base)?.objects.me, me);
  });

  it("stops at a target older than the head", () => {
    const { log } = setup();
    const r1 = log.head;
    const r2 = log.commit([put(message(1))]);
    const r3 = log.commit([put(message(2)), remove(key(1))]);
    log.commit([put(message(3))]);
    assert.deepEqual(log.diff(r1, r2)?.objects.messages, [message(1)]);
    assert.equal(log.diff(r1, r2)?.revision, r2.uuid);
    assert.deepEqual(log.diff(r2, r3)?.deleted_objects.messages, [key(1)]);
    assert.deepEqual(log.diff(r2, r3)?.objects.messages, [message(2)]);
    assert.equal(log.diff(r2, r3)?.serial, 3);
  });

  it("throws a RangeError when the base is newer than the target", () => {
    const { log } = setup();
    const r1 = log.head;
    log.commit([put(message(1))]);
    assert.throws(() => log.diff(log.head, r1), RangeError);
  });

  it("says whether a base is unknown or past the retention", () => {
    const { log, clock } = setup();
    const r1 = log.head;
    clock.time += 1000;
    log.commit([put(message(1))]);
    log.prune(T0 + 1001);
    assertSyncError(() => log.diff(r1), "ERR_SYNC_REVISION_EXPIRED");
    assertSyncError(() => log.diff({ ...r1, uuid: "never" }), "ERR_SYNC_UNKNOWN_REVISION");
  });
});

describe("RevisionLog.changedSince()", () => {
  it("counts distinct keys changed after the base", () => {
    const { log } = setup();
    const r1 = log.head;
    assert.equal(log.changedSince(r1), 0);
    log.commit([put(message(1)), put(message(2))]);
    const r2 = log.head;
    for (let n = 0; n < 50; n++) log.commit([put(message(1, `edit ${n}`))]);
    log.commit([remove(key(2)), put(team(1), "teams")]);
    assert.equal(log.changedSince(r1), 3);
    assert.equal(log.changedSince(r2), 3);
    assert.equal(log.changedSince(log.resolve("cccccccc-0000-4000-8000-000000000034")), 2);
    assert.equal(log.changedSince(log.head), 0);
    log.commit([{
      entity: "me",
      key: String(ME["uuid"]),
      value: { ...ME, notify_language: "en" },
    }]);
    assert.equal(log.changedSince(r1), 4);
  });
});

describe("RevisionLog.prune()", () => {
  it("counts the retention from when a revision stopped being the head, and keeps pruned ids for good", () => {
    const { log, clock } = setup();
    const r1 = log.head;
    clock.time += 100_000;
    const r2 = log.commit([put(message(1))]);
    // r1 was the head for 100 s: created long before, it ended at T0 + 100 s.
    assert.equal(log.prune(T0 + 100_000), 0, "ended exactly then: still a base");
    assert.equal(log.status(r1.uuid), "known");
    assert.equal(log.prune(T0 + 100_001), 1);
    assert.equal(log.status(r1.uuid), "pruned");
    clock.time += 1000;
    log.commit([put(message(2))]);
    log.prune(Number.MAX_SAFE_INTEGER);
    assert.equal(log.status(r1.uuid), "pruned", "expired, never unknown, however long ago");
    assert.equal(log.status(r2.uuid), "pruned");
    assertSyncError(() => log.resolve(r1.uuid), "ERR_SYNC_REVISION_EXPIRED");
    assert.equal(log.export().pruned.length, 2, "and kept across an export");
  });

  it("forgets revisions that stopped being the head before a time, never the head", () => {
    const { log, clock } = setup();
    const r1 = log.head;
    clock.time += 1000;
    const r2 = log.commit([put(message(1))]);
    clock.time += 1000;
    const r3 = log.commit([put(message(2))]);
    assert.equal(log.prune(T0 + 1001), 1, "r1 stopped being the head at T0 + 1000");
    assert.equal(log.status(r1.uuid), "pruned");
    assert.equal(log.isPruned(r1.uuid), true);
    assert.equal(log.revision(r1.uuid), undefined);
    assertSyncError(() => log.resolve(r1.uuid), "ERR_SYNC_REVISION_EXPIRED");
    assert.equal(log.status(r2.uuid), "known");
    assert.equal(log.status("never-issued"), "unknown");
    assert.equal(log.isPruned("never-issued"), false);
    assertSyncError(() => log.resolve("never-issued"), "ERR_SYNC_UNKNOWN_REVISION");
    assert.deepEqual(log.oldest, r2);
    assert.equal(log.prune(Number.POSITIVE_INFINITY), 1);
    assert.deepEqual(log.oldest, r3);
    assert.equal(log.prune(Number.POSITIVE_INFINITY), 0);
    assert.equal(log.head, r3);
    assert.deepEqual(log.snapshot().objects.messages, [message(1), message(2)]);
    assert.equal(log.diff(r3), undefined);
  });

  it("rejects a time that is not a number", () => {
    const { log } = setup();
    assert.throws(() => log.prune(Number.NaN), TypeError);
    assert.throws(() => log.prune("1" as never), TypeError);
  });

  it("keeps diffs, snapshots and counts of retained revisions exact across many prunes", () => {
    const prng = createPrng(0x9e3779b9);
    console.log(`prune property: seed ${prng.seed}`);
    const make = (): { log: RevisionLog; clock: { time: number } } => setup();
    const pruned = make();
    const full = make();
    const revisions: Revision[] = [pruned.log.head];
    for (let step = 0; step < 6000; step++) {
      const changes: Change[] = [];
      for (let n = 1 + prng.int(3); n > 0; n--) {
        const k = prng.int(40);
        changes.push(prng.int(4) === 0 ? remove(key(k)) : put(message(k, `s${step}`)));
      }
      pruned.clock.time += 10;
      full.clock.time += 10;
      revisions.push(pruned.log.commit(changes));
      full.log.commit(changes);
      if (step % 500 === 499) {
        const before = pruned.clock.time - 1000 - prng.int(20_000);
        pruned.log.prune(before);
        const oldest = pruned.log.oldest;
        const next = revisions[oldest.serial];
        assert.ok(
          next === undefined || next.createdAt >= before,
          "the oldest kept stopped being the head at `before` or later",
        );
        for (const revision of revisions) {
          const status = pruned.log.status(revision.uuid);
          assert.equal(status, revision.serial < oldest.serial ? "pruned" : "known");
        }
        for (let probe = 0; probe < 20; probe++) {
          const serial = oldest.serial + prng.int(pruned.log.head.serial - oldest.serial + 1);
          const base = revisions[serial - 1] ?? assert.fail(`no revision ${serial}`);
          assert.deepEqual(pruned.log.diff(base), full.log.diff(base), `diff from ${serial}`);
          assert.equal(
            pruned.log.changedSince(base),
            full.log.changedSince(base),
            `changedSince(${serial})`,
          );
          assert.deepEqual(
            pruned.log.snapshot(base),
            full.log.snapshot(base),
            `snapshot at ${serial}`,
          );
          const to = revisions[serial - 1 + prng.int(pruned.log.head.serial - serial + 1)] ??
            assert.fail("no target");
          assert.deepEqual(
            pruned.log.diff(base, to),
            full.log.diff(base, to),
            `diff ${serial} -> ${to.serial}`,
          );
        }
      }
    }
    assert.ok(pruned.log.oldest.serial > 3000, `pruned up to ${pruned.log.oldest.serial}`);
  });
});

describe("RevisionLog.get()", () => {
  it("reads current objects by entity and key", () => {
    const { log } = setup();
    log.commit([put(message(1)), put(team(1), "teams")]);
    assert.deepEqual(log.get("messages", key(1)), message(1));
    assert.equal(log.get("teams", key(1)), undefined);
    assert.deepEqual([...log.objects("teams")], [team(1)]);
    assert.deepEqual(log.get("me", String(ME["uuid"])), ME);
    assert.throws(() => log.get("accounts" as never, key(1)), TypeError);
  });
});

describe("RevisionLog.size", () => {
  it("counts the current objects, me included, as a snapshot lists them", () => {
    const { log } = setup();
    assert.equal(log.size, 1);
    log.commit([put(message(1)), put(message(2)), put(team(1), "teams")]);
    assert.equal(log.size, 4);
    log.commit([remove(key(1))]);
    assert.equal(log.size, 3);
    const data = log.snapshot();
    assert.equal(1 + data.objects.messages.length + data.objects.teams.length, log.size);
  });
});

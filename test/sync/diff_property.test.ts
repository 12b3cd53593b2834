import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  applyDiff,
  applyPatch,
  type Change,
  checkPatch,
  type EntityName,
  parsePatch,
  type Revision,
  RevisionLog,
  type SyncDiff,
  type SyncObject,
  type SyncObjects,
} from "../../lib/sync/mod.ts";
import { createPrng, type Prng } from "../_helpers/prng.ts";

const BASE_SEED = Number(process.env["SYNC_SEED"] ?? 0x5eed2024);
const SEQUENCES = 4_000;
const USER = { uuid: "aaaaaaaa-0000-4000-8000-000000000001", username: "alice" };
const OTHER_USER = "bbbbbbbb-0000-4000-8000-000000000002";
const MESSAGE_KEYS = Array.from({ length: 6 }, (_, i) => `10000000-0000-4000-8000-00000000000${i}`);
const TEAM_KEYS = Array.from({ length: 5 }, (_, i) => `20000000-0000-4000-8000-00000000000${i}`);
const LANGUAGES = [null, "en", "fr", "ru", "es", "de"];
const SUBJECTS = ["Hello", "Re: Hello", "Invoice", "x"];
const BODIES = ["", "Hi there", "See attached"];
const DATES = ["2024-01-01T00:00:00Z", "2024-02-29T12:30:00Z", "2023-12-31T23:59:59.5Z"];
const TEAM_NAMES = ["Alpha", "alpha", "Beta", "Gamma", "Delta", "Epsilon"];
const COLORS = [null, "#FF0000", "#00ff00"];

/** The data of a context as the test models it, independently of the log. */
interface Model {
  readonly me: SyncObject | null;
  readonly messages: ReadonlyMap<string, SyncObject>;
  readonly teams: ReadonlyMap<string, SyncObject>;
}

type ListName = "messages" | "teams";

function counterUuid(prefix: string): () => string {
  let n = 0;
  return () => `${prefix}-0000-4000-8000-${(++n).toString(16).padStart(12, "0")}`;
}

function sorted(map: ReadonlyMap<string, SyncObject>): SyncObject[] {
  return [...map.keys()].sort().map((key) => map.get(key) ?? assert.fail(`no ${key}`));
}

function objectsOf(model: Model): SyncObjects {
  return { me: model.me, messages: sorted(model.messages), teams: sorted(model.teams) };
}

/** Applies a diff the way a client does, written here without the library's help. */
function clientApply(model: Model, diff: SyncDiff): Model {
  let me = model.me;
  if (me !== null && diff.deleted_objects.me === me["uuid"]) me = null;
  if (diff.objects.me !== null) me = diff.objects.me;
  const list = (name: ListName): Map<string, SyncObject> => {
    const map = new Map(model[name]);
    for (const key of diff.deleted_objects[name]) map.delete(key);
    for (const object of diff.objects[name]) map.set(String(object["uuid"]), object);
    return map;
  };
  return { me, messages: list("messages"), teams: list("teams") };
}

/** A random message or team in JSON form, sometimes leaving defaultable fields out. */
function randomObject(prng: Prng, name: ListName, key: string): Record<string, unknown> {
  const object: Record<string, unknown> = { uuid: prng.int(8) === 0 ? key.toUpperCase() : key };
  if (name === "messages") {
    object["subject"] = prng.pick(SUBJECTS);
    object["body"] = prng.pick(BODIES);
    object["sent_at"] = prng.pick(DATES);
    if (prng.int(2) === 0) object["read"] = prng.int(2) === 0;
  } else {
    object["name"] = prng.pick(TEAM_NAMES);
    if (prng.int(2) === 0) object["color"] = prng.pick(COLORS);
    if (prng.int(2) === 0) object["archived"] = prng.int(3) === 0;
  }
  return object;
}

/** The object a patch object becomes once its defaults are filled, as the test expects it. */
function completed(name: ListName, raw: Record<string, unknown>): SyncObject {
  const uuid = String(raw["uuid"]).toLowerCase();
  if (name === "messages") {
    return {
      uuid,
      subject: String(raw["subject"]),
      body: String(raw["body"]),
      read: raw["read"] === true,
      sent_at: String(raw["sent_at"]),
    };
  }
  const color = raw["color"];
  return {
    uuid,
    name: String(raw["name"]),
    color: typeof color === "string" ? color : null,
    archived: raw["archived"] === true,
  };
}

/** A random patch body over the model, and the model it leads to if accepted. */
function randomPatch(prng: Prng, model: Model): { body: Record<string, unknown>; next: Model } {
  let me = model.me;
  const lists = { messages: new Map(model.messages), teams: new Map(model.teams) };
  const objects: Record<string, unknown> = {};
  const deleted: Record<string, unknown> = {};
  if (me !== null && prng.int(4) === 0) {
    const language = prng.pick(LANGUAGES);
    const patchMe: Record<string, unknown> = { notify_language: language };
    if (prng.int(2) === 0) patchMe["uuid"] = prng.int(20) === 0 ? OTHER_USER : USER.uuid;
    if (prng.int(2) === 0) patchMe["username"] = prng.int(20) === 0 ? "mallory" : me["username"];
    objects["me"] = patchMe;
    me = { uuid: me["uuid"] ?? null, username: me["username"] ?? null, notify_language: language };
  }
  for (const name of ["messages", "teams"] as const) {
    const keys = name === "messages" ? MESSAGE_KEYS : TEAM_KEYS;
    const sent: unknown[] = [];
    const removed: unknown[] = [];
    const used = new Set<string>();
    for (let op = prng.int(4); op > 0; op--) {
      const key = prng.pick(keys);
      if (used.has(key) && prng.int(10) !== 0) continue;
      used.add(key);
      const current = lists[name].get(key);
      const roll = prng.int(10);
      if (current !== undefined && roll < 3) {
        removed.push(prng.int(2) === 0 ? key : { uuid: key });
        lists[name].delete(key);
      } else if (current !== undefined && roll < 5) {
        sent.push({ ...current }); // sent back unchanged: a no-op
      } else if (current === undefined && roll === 9) {
        removed.push(key); // deleting a missing object: the patch is rejected
      } else {
        const raw = randomObject(prng, name, key);
        sent.push(raw);
        lists[name].set(key, completed(name, raw));
      }
    }
    if (sent.length > 0 || prng.int(4) === 0) objects[name] = sent;
    if (removed.length > 0) deleted[name] = removed;
  }
  const body: Record<string, unknown> = {};
  if (Object.keys(objects).length > 0 || Object.keys(deleted).length === 0) {
    body["objects"] = objects;
  }
  if (Object.keys(deleted).length > 0) body["deleted_objects"] = deleted;
  if (prng.int(3) === 0) body["serial"] = prng.int(1000);
  return { body, next: { me, messages: lists.messages, teams: lists.teams } };
}

/**
 * Random changes committed directly: keys changed twice in one revision,
 * objects created and deleted at once, values rewritten unchanged.
 */
function randomChanges(prng: Prng, model: Model): { changes: Change[]; next: Model } {
  const lists = { messages: new Map(model.messages), teams: new Map(model.teams) };
  const changes: Change[] = [];
  for (let n = 1 + prng.int(4); n > 0; n--) {
    const name: ListName = prng.int(2) === 0 ? "messages" : "teams";
    const key = prng.pick(name === "messages" ? MESSAGE_KEYS : TEAM_KEYS);
    const current = lists[name].get(key);
    const roll = prng.int(3);
    const value = roll === 0
      ? null
      : roll === 1 && current !== undefined
      ? current
      : completed(name, randomObject(prng, name, key));
    if (value === null) lists[name].delete(key);
    else lists[name].set(key, value);
    changes.push({ entity: name, key, value });
  }
  return { changes, next: { me: model.me, messages: lists.messages, teams: lists.teams } };
}

function sameModel(a: Model, b: Model): boolean {
  return JSON.stringify(objectsOf(a)) === JSON.stringify(objectsOf(b));
}

/** The keys a revision changed, as `entity/key`. */
function touchedKeys(changes: readonly { entity: EntityName; key: string }[]): Set<string> {
  return new Set(changes.map((change) => `${change.entity}/${change.key}`));
}

/** The keys whose objects differ between two models. */
function differingKeys(before: Model, after: Model): Set<string> {
  const keys = new Set<string>();
  if (before.me !== after.me && JSON.stringify(before.me) !== JSON.stringify(after.me)) {
    keys.add(`me/${USER.uuid}`);
  }
  for (const name of ["messages", "teams"] as const) {
    for (const key of new Set([...before[name].keys(), ...after[name].keys()])) {
      if (JSON.stringify(before[name].get(key)) !== JSON.stringify(after[name].get(key))) {
        keys.add(`${name}/${key}`);
      }
    }
  }
  return keys;
}

/** What the sequences exercised, so that a weaker generator cannot pass unnoticed. */
const STATS = {
  rejected: 0,
  noop: 0,
  applied: 0,
  commits: 0,
  recreated: 0,
  deletions: 0,
  emptyDiffs: 0,
};

/** Runs one random sequence and checks every pair of its revisions; returns the pairs checked. */
function runSequence(seed: number): number {
  const prng = createPrng(seed);
  let time = Date.UTC(2024, 0, 1) + prng.int(1_000_000);
  const me: SyncObject = { uuid: USER.uuid, username: USER.username, notify_language: null };
  const log = new RevisionLog({ now: () => time, uuid: counterUuid("cccccccc"), me });
  const revisions: Revision[] = [log.head];
  const models: Model[] = [{ me, messages: new Map(), teams: new Map() }];
  const touched: Set<string>[] = [touchedKeys([{ entity: "me", key: USER.uuid }])];
  for (let step = 3 + prng.int(9); step > 0; step--) {
    time += prng.int(3_000);
    const model = models[models.length - 1] ?? assert.fail("no model");
    const head = log.head;
    if (prng.int(6) === 0) {
      const { changes, next } = randomChanges(prng, model);
      revisions.push(log.commit(changes));
      STATS.commits++;
      models.push(next);
      touched.push(touchedKeys(changes));
      continue;
    }
    const { body, next } = randomPatch(prng, model);
    const patch = parsePatch(body);
    const errors = checkPatch(patch, log, USER);
    if (errors.length > 0) {
      assert.equal(log.head, head, "a rejected patch is not applied");
      STATS.rejected++;
      continue;
    }
    const revision = applyPatch(patch, log);
    assert.equal(
      revision === undefined,
      sameModel(model, next),
      `a patch commits exactly when it changes something: ${JSON.stringify(body)}`,
    );
    if (revision === undefined) {
      STATS.noop++;
      continue;
    }
    STATS.applied++;
    for (const name of ["messages", "teams"] as const) {
      for (const key of next[name].keys()) {
        if (!model[name].has(key) && models.some((earlier) => earlier[name].has(key))) {
          STATS.recreated++;
        }
      }
    }
    revisions.push(revision);
    models.push(next);
    touched.push(differingKeys(model, next));
  }

  let pairs = 0;
  for (let i = 0; i < revisions.length; i++) {
    const a = revisions[i] ?? assert.fail("no revision");
    const modelA = models[i] ?? assert.fail("no model");
    assert.deepEqual(log.snapshot(a).objects, objectsOf(modelA), `snapshot at serial ${a.serial}`);
    assert.equal(a.serial, i + 1);
    const changedAfter = new Set<string>();
    for (let j = i; j < revisions.length; j++) {
      const b = revisions[j] ?? assert.fail("no revision");
      const modelB = models[j] ?? assert.fail("no model");
      if (j > i) { for (const key of touched[j] ?? []) changedAfter.add(key); }
      const diff = log.diff(a, b);
      pairs++;
      if (i === j) {
        assert.equal(diff, undefined, "a diff from a revision to itself is undefined");
        continue;
      }
      assert.ok(diff !== undefined, `a diff over ${j - i} revisions is defined`);
      assert.equal(diff.base_revision, a.uuid);
      assert.equal(diff.revision, b.uuid);
      assert.equal(diff.serial, b.serial);
      assert.deepEqual(
        objectsOf(clientApply(modelA, diff)),
        objectsOf(modelB),
        `diff ${a.serial} -> ${b.serial}`,
      );
      const mentioned = diff.objects.messages.length + diff.objects.teams.length +
        (diff.objects.me === null ? 0 : 1);
      const removed = diff.deleted_objects.messages.length + diff.deleted_objects.teams.length;
      if (removed > 0) STATS.deletions++;
      if (mentioned + removed === 0) STATS.emptyDiffs++;
      for (const name of ["messages", "teams"] as const) {
        const deleted: readonly string[] = diff.deleted_objects[name];
        const keys: string[] = diff.objects[name].map((object) => String(object["uuid"]));
        assert.deepEqual([...deleted].sort(), deleted, "deleted keys are sorted");
        assert.deepEqual([...keys].sort(), keys, "objects are sorted by uuid");
        for (const key of deleted) {
          assert.ok(modelA[name].has(key), `deleted ${name} ${key} existed at the base`);
          assert.ok(!modelB[name].has(key), `deleted ${name} ${key} is gone at the target`);
        }
        for (const key of keys) {
          assert.ok(changedAfter.has(`${name}/${key}`), `${name} ${key} changed in between`);
        }
      }
      assert.equal(diff.deleted_objects.me, null);
      if (diff.objects.me !== null) {
        assert.ok(changedAfter.has(`me/${USER.uuid}`), "me changed in between");
      }
      assert.deepEqual(applyDiff(log.snapshot(a), diff), log.snapshot(b), "applyDiff agrees");
      if (j === revisions.length - 1) {
        assert.equal(log.changedSince(a), changedAfter.size, `changedSince(${a.serial})`);
      }
    }
    if (i > 0) {
      assert.throws(() => log.diff(a, revisions[0] ?? assert.fail("no revision")), RangeError);
    }
  }
  return pairs;
}

describe("RevisionLog diff() property", () => {
  it(`turns snapshot(A) into snapshot(B) for every A <= B over ${SEQUENCES} random sequences`, () => {
    console.log(`diff property: base seed ${BASE_SEED} (set SYNC_SEED to replay)`);
    let pairs = 0;
    for (let n = 0; n < SEQUENCES; n++) {
      const seed = (BASE_SEED + n) >>> 0;
      try {
        pairs += runSequence(seed);
      } catch (error) {
        console.log(`diff property: failed with seed ${seed}`);
        throw error;
      }
    }
    console.log(`diff property: ${pairs} revision pairs checked; ${JSON.stringify(STATS)}`);
    assert.ok(pairs > SEQUENCES * 10);
    for (const [what, count] of Object.entries(STATS)) {
      assert.ok(count > 50, `sequences exercised ${what}: ${count}`);
    }
  });
});

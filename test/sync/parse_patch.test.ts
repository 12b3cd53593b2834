import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parsePatch, SyncError, type SyncPatch } from "../../lib/sync/mod.ts";

const U1 = "10000000-0000-4000-8000-000000000001";
const U2 = "10000000-0000-4000-8000-000000000002";
const ME_ID = "aaaaaaaa-0000-4000-8000-000000000001";
const MESSAGE = { uuid: U1, subject: "Hi", body: "", read: true, sent_at: "2024-02-29T23:59:59Z" };
const TEAM = { uuid: U2, name: "Core", color: "#00ff00", archived: false };
const EMPTY = { me: null, messages: [], teams: [] };

/** The field paths of the problems `parsePatch` reports for a body. */
function problemFields(body: unknown, options = {}): (string | undefined)[] {
  try {
    parsePatch(body, options);
  } catch (error) {
    assert.ok(error instanceof SyncError, `expected a SyncError, got ${String(error)}`);
    assert.equal(error.code, "ERR_SYNC_INVALID_PATCH");
    assert.equal(error.name, "SyncError");
    assert.match(error.message, /^Cannot accept patch: \d+ problems?: /);
    for (const problem of error.errors) assert.equal(typeof problem.message, "string");
    return error.errors.map((problem) => problem.field);
  }
  return assert.fail("expected the body to be rejected");
}

describe("parsePatch()", () => {
  const valid: { name: string; body: unknown; expected: SyncPatch }[] = [
    {
      name: "reads objects of every entity",
      body: {
        objects: { me: { notify_language: "fr" }, messages: [MESSAGE], teams: [TEAM] },
        serial: 7,
        base_revision: null,
      },
      expected: {
        objects: { me: { notify_language: "fr" }, messages: [MESSAGE], teams: [TEAM] },
        deleted_objects: EMPTY,
        serial: 7,
        base_revision: null,
      },
    },
    {
      name: "reads deletions as bare UUIDs or key objects, mixed, lower-casing them",
      body: {
        deleted_objects: { messages: [U1, { uuid: U2.toUpperCase() }], teams: [{ uuid: U2 }] },
      },
      expected: {
        objects: EMPTY,
        deleted_objects: { me: null, messages: [U1, U2], teams: [U2] },
        serial: null,
        base_revision: null,
      },
    },
    {
      name: "reads a deleted me as a UUID or a key object",
      body: { deleted_objects: { me: { uuid: ME_ID } } },
      expected: {
        objects: EMPTY,
        deleted_objects: { me: ME_ID, messages: [], teams: [] },
        serial: null,
        base_revision: null,
      },
    },
    {
      name: "treats null members as absent",
      body: {
        objects: { me: null, messages: null, teams: null },
        deleted_objects: { me: null, messages: null },
        serial: null,
        base_revision: null,
      },
      expected: { objects: EMPTY, deleted_objects: EMPTY, serial: null, base_revision: null },
    },
    {
      name: "accepts empty sections",
      body: { objects: {}, serial: 0, base_revision: null },
      expected: { objects: EMPTY, deleted_objects: EMPTY, serial: 0, base_revision: null },
    },
    {
      name: "keeps objects as sent, without defaults, and lower-cases uuid fields",
      body: {
        objects: {
          me: { uuid: ME_ID.toUpperCase(), username: "alice", notify_language: null },
          teams: [{ uuid: U2, name: "x", color: null }],
        },
      },
      expected: {
        objects: {
          me: { uuid: ME_ID, username: "alice", notify_language: null },
          messages: [],
          teams: [{ uuid: U2, name: "x", color: null }],
        },
        deleted_objects: EMPTY,
        serial: null,
        base_revision: null,
      },
    },
    {
      name: "accepts boundary lengths, code points and fractional seconds",
      body: {
        objects: {
          messages: [{
            uuid: U1,
            subject: "😀".repeat(200),
            body: "b".repeat(10_000),
            sent_at: "2024-01-01T00:00:00.123456Z",
          }],
          teams: [{ uuid: U2, name: "n".repeat(100) }],
        },
      },
      expected: {
        objects: {
          me: null,
          messages: [{
            uuid: U1,
            subject: "😀".repeat(200),
            body: "b".repeat(10_000),
            sent_at: "2024-01-01T00:00:00.123456Z",
          }],
          teams: [{ uuid: U2, name: "n".repeat(100) }],
        },
        deleted_objects: EMPTY,
        serial: null,
        base_revision: null,
      },
    },
  ];
  for (const c of valid) {
    it(c.name, () => assert.deepEqual(parsePatch(c.body), c.expected));
  }

  it("accepts real days: leap days, month ends", () => {
    for (
      const sent_at of [
        "2000-02-29T00:00:00Z",
        "2024-02-29T23:59:59Z",
        "2023-04-30T12:00:00Z",
        "2023-12-31T00:00:00.5Z",
      ]
    ) {
      assert.equal(
        parsePatch({ objects: { messages: [{ ...MESSAGE, sent_at }] } }).objects.messages[0]
          ?.["sent_at"],
        sent_at,
      );
    }
  });

  it("quotes at most 40 characters of a bad value", () => {
    assert.throws(
      () => parsePatch({ objects: { me: { notify_language: "x".repeat(50) } } }),
      (error: unknown) => {
        assert.ok(error instanceof SyncError);
        assert.equal(
          error.errors[0]?.message,
          `Expected one of "en", "fr", "ru", "es", "de", got "${"x".repeat(40)}…"`,
        );
        return true;
      },
    );
  });

  it("says how many problems there are and shows the first three", () => {
    assert.throws(() => parsePatch({ objects: {}, serial: -1 }), {
      message:
        "Cannot accept patch: 1 problem: serial: Expected a non-negative integer or null, got -1",
    });
    assert.throws(() => parsePatch([]), {
      message: "Cannot accept patch: 1 problem: Expected a JSON object, got an array",
    });
    assert.throws(() => parsePatch({ a: 1, b: 2, c: 3, d: 4 }), {
      message: /^Cannot accept patch: 5 problems: a: .*; b: .*; c: .*; …$/,
    });
  });

  it("returns frozen data", () => {
    const patch = parsePatch({ objects: { messages: [MESSAGE] } });
    assert.ok(Object.isFrozen(patch));
    assert.ok(Object.isFrozen(patch.objects.messages));
    assert.ok(Object.isFrozen(patch.objects.messages[0]));
  });

  const message = (fields: Record<string, unknown>): unknown => ({
    objects: { messages: [{ ...MESSAGE, ...fields }] },
  });
  const team = (fields: Record<string, unknown>): unknown => ({
    objects: { teams: [{ ...TEAM, ...fields }] },
  });
  const invalid: { name: string; body: unknown; fields: (string | undefined)[] }[] = [
    { name: "a body that is not an object", body: [], fields: [undefined] },
    { name: "a body that is null", body: null, fields: [undefined] },
    { name: "a body that is a string", body: "objects", fields: [undefined] },
    { name: "no objects nor deletions", body: {}, fields: ["objects"] },
    {
      name: "null objects and deletions",
      body: { objects: null, deleted_objects: null, serial: 1, base_revision: null },
      fields: ["objects"],
    },
    {
      name: "an unknown top-level member",
      body: { objects: {}, extra: 1, "a b": 2 },
      fields: ["extra", '["a b"]'],
    },
    { name: "objects that is an array", body: { objects: [] }, fields: ["objects"] },
    {
      name: "an unknown entity",
      body: { objects: { accounts: [] }, deleted_objects: { drafts: [] } },
      fields: ["objects.accounts", "deleted_objects.drafts"],
    },
    { name: "me that is not an object", body: { objects: { me: [] } }, fields: ["objects.me"] },
    {
      name: "messages that is not an array",
      body: { objects: { messages: {} } },
      fields: ["objects.messages"],
    },
    {
      name: "a message that is not an object",
      body: { objects: { messages: [MESSAGE, 5, MESSAGE] } },
      fields: ["objects.messages[1]"],
    },
    {
      name: "a message without uuid",
      body: { objects: { messages: [{ subject: "x" }] } },
      fields: ["objects.messages[0].uuid"],
    },
    {
      name: "a uuid that is not a UUID",
      body: message({ uuid: "1234" }),
      fields: ["objects.messages[0].uuid"],
    },
    {
      name: "an empty subject",
      body: message({ subject: "" }),
      fields: ["objects.messages[0].subject"],
    },
    {
      name: "a subject too long",
      body: message({ subject: "s".repeat(201) }),
      fields: ["objects.messages[0].subject"],
    },
    {
      name: "a body far too long",
      body: message({ body: "b".repeat(30_000) }),
      fields: ["objects.messages[0].body"],
    },
    {
      name: "a subject that is a number",
      body: message({ subject: 5 }),
      fields: ["objects.messages[0].subject"],
    },
    {
      name: "a null subject",
      body: message({ subject: null }),
      fields: ["objects.messages[0].subject"],
    },
    {
      name: "read that is a string",
      body: message({ read: "yes" }),
      fields: ["objects.messages[0].read"],
    },
    {
      name: "a date without a zone",
      body: message({ sent_at: "2024-01-01T00:00:00" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "a date with an offset",
      body: message({ sent_at: "2024-01-01T00:00:00+02:00" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "February 30",
      body: message({ sent_at: "2024-02-30T00:00:00Z" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "February 29 of a common year",
      body: message({ sent_at: "2023-02-29T00:00:00Z" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "month 13",
      body: message({ sent_at: "2024-13-01T00:00:00Z" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "hour 24",
      body: message({ sent_at: "2024-01-01T24:00:00Z" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "minute 60",
      body: message({ sent_at: "2024-01-01T10:60:00Z" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "second 60",
      body: message({ sent_at: "2024-01-01T10:00:60Z" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "April 31",
      body: message({ sent_at: "2024-04-31T10:00:00Z" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "February 29 of 1900",
      body: message({ sent_at: "1900-02-29T10:00:00Z" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "day 0",
      body: message({ sent_at: "2024-01-00T10:00:00Z" }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "a date that is a number",
      body: message({ sent_at: 1_700_000_000 }),
      fields: ["objects.messages[0].sent_at"],
    },
    {
      name: "an unknown field",
      body: message({ flagged: true }),
      fields: ["objects.messages[0].flagged"],
    },
    {
      name: "a colour that is not #RRGGBB",
      body: team({ color: "red" }),
      fields: ["objects.teams[0].color"],
    },
    {
      name: "a team name too long",
      body: team({ name: "n".repeat(101) }),
      fields: ["objects.teams[0].name"],
    },
    {
      name: "archived that is null",
      body: team({ archived: null }),
      fields: ["objects.teams[0].archived"],
    },
    {
      name: "an unknown language",
      body: { objects: { me: { notify_language: "it" } } },
      fields: ["objects.me.notify_language"],
    },
    {
      name: "a username too short",
      body: { objects: { me: { username: "al" } } },
      fields: ["objects.me.username"],
    },
    {
      name: "a me uuid that is not a UUID",
      body: { objects: { me: { uuid: 1 } } },
      fields: ["objects.me.uuid"],
    },
    {
      name: "an unknown field of me",
      body: { objects: { me: { email: "a@b" } } },
      fields: ["objects.me.email"],
    },
    {
      name: "deleted_objects that is a string",
      body: { deleted_objects: "all" },
      fields: ["deleted_objects"],
    },
    {
      name: "deleted messages that is not an array",
      body: { deleted_objects: { messages: U1 } },
      fields: ["deleted_objects.messages"],
    },
    {
      name: "deleted keys of the wrong shape",
      body: {
        deleted_objects: {
          teams: [U1, "nope", 3, { id: U1 }, { uuid: "x" }, { uuid: U1, name: "x" }, [U1]],
        },
      },
      fields: [
        "deleted_objects.teams[1]",
        "deleted_objects.teams[2]",
        "deleted_objects.teams[3].id",
        "deleted_objects.teams[3].uuid",
        "deleted_objects.teams[4].uuid",
        "deleted_objects.teams[5].name",
        "deleted_objects.teams[6]",
      ],
    },
    {
      name: "a deleted me that is not a UUID",
      body: { deleted_objects: { me: true } },
      fields: ["deleted_objects.me"],
    },
    { name: "a negative serial", body: { objects: {}, serial: -1 }, fields: ["serial"] },
    { name: "a fractional serial", body: { objects: {}, serial: 1.5 }, fields: ["serial"] },
    {
      name: "a serial beyond safe integers",
      body: { objects: {}, serial: 2 ** 53 },
      fields: ["serial"],
    },
    { name: "a serial that is a string", body: { objects: {}, serial: "1" }, fields: ["serial"] },
    {
      name: "every problem at once, in body order",
      body: {
        objects: {
          me: { uuid: "x", notify_language: 1 },
          messages: [{ uuid: U1, subject: "", body: 3, read: null, sent_at: "yesterday", x: 1 }, {
            subject: "ok",
          }],
          teams: [{ uuid: U2, name: "", color: "#12345" }],
        },
        deleted_objects: { me: "me", messages: [1] },
        serial: -5,
      },
      fields: [
        "objects.me.uuid",
        "objects.me.notify_language",
        "objects.messages[0].x",
        "objects.messages[0].subject",
        "objects.messages[0].body",
        "objects.messages[0].read",
        "objects.messages[0].sent_at",
        "objects.messages[1].uuid",
        "objects.teams[0].name",
        "objects.teams[0].color",
        "deleted_objects.me",
        "deleted_objects.messages[0]",
        "serial",
      ],
    },
  ];
  for (const c of invalid) {
    it(`rejects ${c.name}`, () => assert.deepEqual(problemFields(c.body), c.fields));
  }

  it("quotes odd member names, shortened", () => {
    const long = "k".repeat(100);
    assert.deepEqual(problemFields({ objects: { [long]: [] }, "1st": 0 }), [
      '["1st"]',
      `objects["${"k".repeat(64)}…"]`,
    ]);
  });

  it("counts objects and deletions against maxObjects before reading them", () => {
    const messages = Array.from({ length: 6 }, () => "not even an object");
    assert.deepEqual(
      problemFields({ objects: { messages, me: {} }, deleted_objects: { teams: [U1, U2, U1] } }, {
        maxObjects: 9,
      }),
      [undefined],
    );
    assert.deepEqual(
      problemFields({ objects: { messages }, deleted_objects: { teams: [U1] } }, { maxObjects: 7 })
        .length,
      6,
    );
    const many = Array.from({ length: 10_001 }, () => MESSAGE);
    assert.deepEqual(problemFields({ objects: { messages: many } }), [undefined]);
    assert.equal(
      parsePatch({ objects: { messages: many.slice(1) } }).objects.messages.length,
      10_000,
    );
  });

  it("stops after maxErrors problems", () => {
    const messages = Array.from({ length: 500 }, () => ({ uuid: "bad" }));
    const fields = problemFields({ objects: { messages } });
    assert.equal(fields.length, 101);
    assert.equal(fields[99], "objects.messages[99].uuid");
    assert.equal(fields[100], undefined);
    assert.equal(problemFields({ objects: { messages } }, { maxErrors: 3 }).length, 4);
  });

  it("ignores inherited members and reads __proto__ as an unknown member", () => {
    const body = JSON.parse(
      '{"objects": {"messages": [{"uuid": "10000000-0000-4000-8000-000000000001", "__proto__": {"subject": "x"}}]}}',
    );
    assert.deepEqual(problemFields(body), ["objects.messages[0].__proto__"]);
    const inherited = Object.create({ serial: "bad" });
    inherited.objects = {};
    assert.equal(parsePatch(inherited).serial, null);
  });

  it("passes through errors that are not its own", () => {
    const body = {
      objects: {},
      get serial(): never {
        throw new Error("boom");
      },
    };
    assert.throws(() => parsePatch(body), { message: "boom" });
  });
});

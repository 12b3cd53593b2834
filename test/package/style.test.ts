// The house rules a tool checks (npm run lint, scripts/style.ts): commit
// subjects of at most 72 characters since the rule began. The formatter and
// the linter themselves run in .ci/run, before the tests.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  commitsSince,
  longSubjects,
  MAX_SUBJECT,
  SUBJECT_RULE_SINCE,
} from "../../scripts/style.ts";

describe("longSubjects()", () => {
  const cases = [
    {
      name: "lets a subject of exactly 72 characters through",
      subject: "x".repeat(72),
      breaches: 0,
    },
    { name: "refuses one of 73", subject: "x".repeat(73), breaches: 1 },
    {
      name: "counts characters, not UTF-16 units or bytes",
      subject: "é".repeat(70) + "😀😀",
      breaches: 0,
    },
  ] as const;
  for (const c of cases) {
    it(
      c.name,
      () =>
        assert.equal(
          longSubjects([{ hash: "0123456789abcdef", subject: c.subject }]).length,
          c.breaches,
        ),
    );
  }

  it("names the commit and the length", () => {
    assert.deepEqual(longSubjects([{ hash: "0123456789abcdef", subject: "y".repeat(80) }]), [
      `01234567: its subject has 80 characters (at most ${MAX_SUBJECT}): ${"y".repeat(80)}`,
    ]);
  });
});

describe("the commits since the rule began", () => {
  it("each have a subject of at most 72 characters", () => {
    const commits = commitsSince(SUBJECT_RULE_SINCE);
    assert.deepEqual(longSubjects(commits), []);
  });

  it("are found by their commit time: this rule's own commits are among them", () => {
    const subjects = commitsSince(SUBJECT_RULE_SINCE).map((commit) => commit.subject);
    assert.ok(subjects.length >= 1, "no commit since the rule began");
    assert.deepEqual(commitsSince("2999-01-01T00:00:00Z"), []);
  });

  it("refuses a starting time that is not one", () => {
    assert.throws(() => commitsSince("yesterday"), RangeError);
  });
});

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { CodePointTable } from "../../lib/auth/_code_point_table.ts";
import {
  PRECIS_CATEGORIES,
  SCRIPT_EXTENSIONS,
  SCRIPTS,
  UNICODE_VERSION,
  VIRAMAS,
} from "../../lib/auth/_precis_table.ts";
import {
  checkUsername,
  enforceUsernameCaseMapped,
  enforceUsernameCasePreserved,
  identifierProperty,
  mapWidth,
  prepareUsername,
  USERNAME_UNICODE_VERSION,
  type UsernameCheck,
  usernameKey,
} from "../../lib/auth/names.ts";
import {
  isAllowedCategory,
  isVirama,
  precisCategoryOf,
  runtimeUnicodeVersion,
  scriptExtensionsOf,
  scriptOf,
} from "../../scripts/precis_table.ts";
import { createPrng } from "../_helpers/prng.ts";

const ROOT = join(import.meta.dirname, "..", "..");

/** The first code point of each run of a table, and the last of the run before it. */
function boundaries(runs: readonly string[]): number[] {
  const points: number[] = [];
  let start = 0;
  for (const run of runs.join("").match(/[0-9a-z]+[A-Z]+/g) ?? []) {
    if (start > 0) points.push(start - 1);
    points.push(start);
    start += parseInt(run.slice(0, run.search(/[A-Z]/)), 36);
  }
  return points;
}

describe("the user-name Unicode table", () => {
  it("names one Unicode version, in the table and in the README", () => {
    assert.equal(USERNAME_UNICODE_VERSION, UNICODE_VERSION);
    assert.match(UNICODE_VERSION, /^\d+\.\d+\.\d+$/);
    assert.match(
      readFileSync(join(ROOT, "lib/auth/_precis_table.ts"), "utf8"),
      new RegExp(`^// Written by .* from Unicode ${UNICODE_VERSION.replace(/\./g, "\\.")}:`),
    );
    assert.ok(
      readFileSync(join(ROOT, "README.md"), "utf8").includes(`Unicode ${UNICODE_VERSION}`),
      "the README names the version",
    );
  });

  it("agrees with this runtime's Unicode data on every run boundary and 5,000 random code points assigned in both", () => {
    const prng = createPrng(27);
    const sample = new Set([
      ...[PRECIS_CATEGORIES, SCRIPTS, SCRIPT_EXTENSIONS, VIRAMAS].flatMap((table) =>
        boundaries(table.runs)
      ),
      ...Array.from({ length: 5000 }, () => prng.int(0x110000)),
    ]);
    const [categories, scripts, extensions, viramas] = [
      PRECIS_CATEGORIES,
      SCRIPTS,
      SCRIPT_EXTENSIONS,
      VIRAMAS,
    ].map((table) => new CodePointTable(table));
    const names = SCRIPTS.values;
    const assigned = /^[\P{Cn}\p{Noncharacter_Code_Point}]$/u;
    let compared = 0;
    for (const cp of sample) {
      const category = categories!.get(cp);
      // A runtime of another Unicode version is compared on what both have assigned.
      if (category === "unassigned" || !assigned.test(String.fromCodePoint(cp))) continue;
      const where = `U+${
        cp.toString(16).toUpperCase()
      } (table: Unicode ${UNICODE_VERSION}, runtime: ${runtimeUnicodeVersion()})`;
      assert.equal(category, precisCategoryOf(cp), where);
      assert.equal(viramas!.get(cp) === "9", isVirama(cp), `${where}: virama`);
      compared++;
      // Scripts are kept only where the IdentifierClass allows the code point.
      if (!isAllowedCategory(category)) continue;
      const script = scriptOf(cp, names);
      assert.equal(scripts!.get(cp), script, `${where}: script`);
      assert.equal(
        extensions!.get(cp) || script,
        scriptExtensionsOf(cp, names),
        `${where}: script extensions`,
      );
    }
    assert.ok(compared > 3000, `compared ${compared} code points`);
  });

  const bidi = [
    { name: "a Hebrew name", input: "שלום", valid: true },
    { name: "an Arabic name", input: "مرحبا", valid: true },
    { name: "a Hebrew name ending in digits", input: "שלום12", valid: true },
    { name: "a Hebrew name starting with a digit", input: "1שלום", valid: false },
    { name: "Latin then Hebrew", input: "abcשלום", valid: false },
    { name: "Hebrew then Latin", input: "שלוםabc", valid: false },
    { name: "Arabic with Arabic-Indic and European digits", input: "مرحبا١2", valid: false },
    { name: "Latin with an Arabic-Indic digit", input: "abc١", valid: false },
    {
      name: "a Latin name starting with a digit (no right-to-left text: no Bidi Rule)",
      input: "1abc",
      valid: true,
    },
  ] as const;
  for (const c of bidi) {
    it(`${c.valid ? "takes" : "refuses by the Bidi Rule"} ${c.name}`, () => {
      const result = enforceUsernameCaseMapped(c.input);
      assert.equal(result.kind, c.valid ? "valid" : "invalid", JSON.stringify(result));
      if (!c.valid) assert.equal((result as { rule: string }).rule, "bidi");
    });
  }

  it("maps fullwidth and halfwidth forms to their decompositions", () => {
    assert.equal(mapWidth("ＡＢＣ！１"), "ABC!1");
    assert.equal(mapWidth("ｶﾀｶﾅ"), "カタカナ");
    assert.equal(mapWidth("\u3000"), " ");
    assert.equal(mapWidth("abc"), "abc");
  });
});

describe("enforceUsernameCaseMapped()", () => {
  // RFC 8265 §3.5, Table 3: a sample of legal user names, as the profile enforces them.
  const legal = [
    {
      name: "1: the at sign is in the IdentifierClass",
      input: "juliet@example.com",
      expected: "juliet@example.com",
    },
    { name: "2: ASCII letters", input: "fussball", expected: "fussball" },
    {
      name: "3: LATIN SMALL LETTER SHARP S (U+00DF)",
      input: "fu\u00dfball",
      expected: "fu\u00dfball",
    },
    { name: "4: GREEK SMALL LETTER PI (U+03C0)", input: "\u03c0", expected: "\u03c0" },
    {
      name: "5: GREEK CAPITAL LETTER SIGMA (U+03A3), lower-cased",
      input: "\u03a3",
      expected: "\u03c3",
    },
    { name: "6: GREEK SMALL LETTER SIGMA (U+03C3)", input: "\u03c3", expected: "\u03c3" },
    { name: "7: GREEK SMALL LETTER FINAL SIGMA (U+03C2)", input: "\u03c2", expected: "\u03c2" },
  ] as const;
  for (const c of legal) {
    it(`takes RFC 8265 example ${c.name}`, () =>
      assert.deepEqual(enforceUsernameCaseMapped(c.input), {
        kind: "valid",
        username: c.expected,
      }));
  }

  // RFC 8265 §3.5, Table 4: a sample of illegal user names.
  const illegal = [
    { name: "8: SPACE (U+0020)", input: "foo bar", rule: "disallowed", index: 3 },
    { name: "9: the empty name", input: "", rule: "empty", index: undefined },
    {
      name: "10: ROMAN NUMERAL FOUR (U+2163), a compatibility form",
      input: "henry\u2163",
      rule: "disallowed",
      index: 5,
    },
    { name: "11: INFINITY (U+221E), a symbol", input: "\u221e", rule: "disallowed", index: 0 },
  ] as const;
  for (const c of illegal) {
    it(`refuses RFC 8265 example ${c.name}`, () => {
      const result = enforceUsernameCaseMapped(c.input) as Extract<
        UsernameCheck,
        { kind: "invalid" }
      >;
      assert.equal(result.kind, "invalid");
      assert.equal(result.rule, c.rule);
      assert.equal(result.index, c.index);
    });
  }

  it("compares as RFC 8265 §3.3.4 does: case and width mapped, NFC", () => {
    const enforced = (input: string) =>
      (enforceUsernameCaseMapped(input) as { username: string }).username;
    assert.equal(enforced("heLLo"), enforced("Hello"));
    assert.equal(enforced("heLLo!"), enforced("Hello\uff01"));
    assert.equal(enforced("jose\u0301"), enforced("JOSÉ"));
    assert.notEqual(enforced("heLLo"), enforced("Bello"));
    for (const input of ["heLLo", "Hello\uff01", "jose\u0301", "ＡＮＮＡ"]) {
      assert.equal(enforced(input), usernameKey(input), "the store's key is the profile's");
    }
  });
});

describe("enforceUsernameCasePreserved()", () => {
  it("keeps the case, maps the width and normalizes to NFC", () => {
    assert.deepEqual(enforceUsernameCasePreserved("\u03a3"), { kind: "valid", username: "\u03a3" });
    assert.deepEqual(enforceUsernameCasePreserved("Xx\uff01xX"), {
      kind: "valid",
      username: "Xx!xX",
    });
    assert.deepEqual(enforceUsernameCasePreserved("Jose\u0301"), {
      kind: "valid",
      username: "José",
    });
  });
});

describe("identifierProperty()", () => {
  const cases = [
    { name: "ASCII letters and signs", cps: [0x41, 0x7a, 0x21, 0x7e], expected: "PVALID" },
    {
      name: "letters, digits and marks",
      cps: [0xe9, 0x3c0, 0x5d0, 0x627, 0x4e2d, 0x0301, 0x0967],
      expected: "PVALID",
    },
    {
      name: "the PVALID exceptions (RFC 5892 §2.6)",
      cps: [0xdf, 0x3c2, 0x6fd, 0x6fe, 0xf0b, 0x3007],
      expected: "PVALID",
    },
    { name: "the joiners", cps: [0x200c, 0x200d], expected: "CONTEXTJ" },
    {
      name: "the CONTEXTO exceptions",
      cps: [0xb7, 0x375, 0x5f3, 0x5f4, 0x30fb, 0x660, 0x669, 0x6f0, 0x6f9],
      expected: "CONTEXTO",
    },
    {
      name: "the DISALLOWED exceptions",
      cps: [0x640, 0x7fa, 0x302e, 0x302f, 0x3031, 0x3035, 0x303b],
      expected: "DISALLOWED",
    },
    {
      name:
        "compatibility forms: mathematical letters, digraphs, ligatures, roman numerals, superscripts",
      cps: [0x1d41a, 0x1d52d, 0x1c4, 0x1c5, 0x1c6, 0x133, 0xfb01, 0x2163, 0xb2, 0x2126],
      expected: "DISALLOWED",
    },
    {
      name: "spaces, symbols, punctuation and controls",
      cps: [0x20, 0xa0, 0x3000, 0x221e, 0x265a, 0x20ac, 0xa1, 0x7f, 0x9f],
      expected: "DISALLOWED",
    },
    {
      name: "invisible characters, old Hangul jamo, private use, surrogates and noncharacters",
      cps: [0xad, 0x200b, 0x2060, 0xfe0f, 0x1100, 0x11a8, 0xe000, 0xd800, 0xfffe, 0x10ffff],
      expected: "DISALLOWED",
    },
    { name: "unassigned code points", cps: [0x378, 0x0e5c, 0xe0080], expected: "UNASSIGNED" },
  ] as const;
  for (const c of cases) {
    it(`gives ${c.expected} to ${c.name}`, () => {
      for (const cp of c.cps) {
        assert.equal(identifierProperty(cp), c.expected, `U+${cp.toString(16).toUpperCase()}`);
      }
    });
  }
});

describe("checkUsername()", () => {
  // Look-alikes: a name that looks like another must be that other name or be refused.
  const refused = [
    {
      name: "Latin with a Cyrillic а",
      input: "p\u0430ypal",
      rule: "mixed-script",
      says: ["Latin", "Cyrillic", "U+0430"],
    },
    {
      name: "a Cyrillic а then Latin",
      input: "\u0430dmin",
      rule: "mixed-script",
      says: ["Latin", "Cyrillic", "U+0430"],
    },
    {
      name: "Latin with a Greek ο",
      input: "g\u03bfogle",
      rule: "mixed-script",
      says: ["Latin", "Greek", "U+03BF"],
    },
    {
      name: "Greek with a Latin o",
      input: "\u03b1\u03b2o",
      rule: "mixed-script",
      says: ["Latin", "Greek"],
    },
    {
      name: "Cyrillic with a Greek ο",
      input: "\u0441\u03bf\u0441",
      rule: "mixed-script",
      says: ["Cyrillic", "Greek"],
    },
    {
      name: "Latin, Cyrillic and Greek",
      input: "a\u0430\u03b1",
      rule: "mixed-script",
      says: ["Latin", "Cyrillic", "Greek"],
    },
    {
      name: "Latin with Hangul and kana (no one writes both)",
      input: "a\ud55c\u30ab",
      rule: "mixed-script",
      says: ["Hangul", "Katakana"],
    },
    {
      name: "mathematical bold a",
      input: "\ud835\udc1admin",
      rule: "disallowed",
      says: ["U+1D41A", 'compatibility form of "a"'],
    },
    {
      name: "mathematical fraktur p",
      input: "\ud835\udd2daypal",
      rule: "disallowed",
      says: ["U+1D52D"],
    },
    {
      name: "the digraph ǆ",
      input: "\u01c6ango",
      rule: "disallowed",
      says: ["U+01C6", 'compatibility form of "dž"'],
    },
    { name: "the titlecase digraph ǅ", input: "\u01c5ungla", rule: "disallowed", says: ["U+01C5"] },
    { name: "the ligature ﬁ", input: "\ufb01nance", rule: "disallowed", says: ["U+FB01"] },
    { name: "the ij digraph", input: "\u0133sselmeer", rule: "disallowed", says: ["U+0133"] },
    { name: "a roman numeral", input: "henry\u2163", rule: "disallowed", says: ["U+2163"] },
    { name: "a superscript digit", input: "user\u00b2", rule: "disallowed", says: ["U+00B2"] },
    {
      name: "a zero width space",
      input: "ad\u200bmin",
      rule: "disallowed",
      says: ["U+200B", "invisible"],
    },
    { name: "a soft hyphen", input: "ad\u00admin", rule: "disallowed", says: ["U+00AD"] },
    {
      name: "a zero width non-joiner between Latin letters",
      input: "ad\u200cmin",
      rule: "context",
      says: ["U+200C", "RFC 5892 A.1"],
    },
    {
      name: "a zero width joiner between Latin letters",
      input: "ad\u200dmin",
      rule: "context",
      says: ["U+200D"],
    },
    {
      name: "a middle dot not between two l",
      input: "co\u00b7lega",
      rule: "context",
      says: ["U+00B7"],
    },
    {
      name: "a symbol",
      input: "\u221e\u221e\u221e",
      rule: "disallowed",
      says: ["U+221E", "symbols"],
    },
    { name: "a slash", input: "a/b", rule: "signs", says: ["'/'"] },
    { name: "a space", input: "has space", rule: "disallowed", says: ["spaces"] },
    {
      name: "a leading combining mark",
      input: "\u0301abc",
      rule: "leading-mark",
      says: ["U+0301"],
    },
    { name: "two characters", input: "ab", rule: "length", says: ["3 to 64"] },
    { name: "65 characters", input: "x".repeat(65), rule: "length", says: ["65"] },
    {
      name: "an unassigned code point",
      input: "abc\u0378",
      rule: "disallowed",
      says: [`Unicode ${UNICODE_VERSION}`],
    },
  ] as const;
  for (const c of refused) {
    it(`refuses ${c.name} (${c.rule}), saying why`, () => {
      const result = checkUsername(c.input);
      assert.equal(result.kind, "invalid", JSON.stringify(result));
      assert.equal((result as { rule: string }).rule, c.rule);
      for (const word of c.says) {
        assert.ok(
          (result as { message: string }).message.includes(word),
          `${(result as { message: string }).message} names ${word}`,
        );
      }
    });
  }

  const taken = [
    { name: "fullwidth Latin, mapped to ASCII", input: "ＡＮＮＡ", expected: "ANNA" },
    {
      name: "fullwidth look-alike of paypal, which is paypal",
      input: "ｐａｙｐａｌ",
      expected: "paypal",
    },
    { name: "halfwidth katakana, mapped to katakana", input: "ｶﾀｶﾅ", expected: "カタカナ" },
    {
      name: "an e-mail address",
      input: "erin.o+sync@example.org",
      expected: "erin.o+sync@example.org",
    },
    { name: "a decomposed é, in NFC", input: "jose\u0301", expected: "josé" },
    {
      name: "a whole Cyrillic name",
      input: "\u0430\u0434\u043c\u0438\u043d",
      expected: "\u0430\u0434\u043c\u0438\u043d",
    },
    {
      name: "a Greek name with an Ohm sign, in NFC",
      input: "\u2126\u03bc\u03b5\u03b3\u03b1",
      expected: "\u03a9\u03bc\u03b5\u03b3\u03b1",
    },
    { name: "Devanagari with its vowel signs and virama", input: "अनुच्छेद", expected: "अनुच्छेद" },
    {
      name: "Devanagari with a zero width joiner after a virama",
      input: "\u0915\u094d\u200d\u0937",
      expected: "\u0915\u094d\u200d\u0937",
    },
    {
      name: "Persian with a zero width non-joiner between joining letters",
      input: "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
      expected: "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
    },
    {
      name: "Catalan with a middle dot between two l",
      input: "col\u00b7lega",
      expected: "col\u00b7lega",
    },
    {
      name: "Japanese: Han, Katakana and the prolonged sound mark",
      input: "東京タワー",
      expected: "東京タワー",
    },
    { name: "Japanese with Latin", input: "東京tower", expected: "東京tower" },
    { name: "Korean with Latin", input: "한국abc", expected: "한국abc" },
    { name: "Chinese with Bopomofo", input: "中文ㄅㄆ", expected: "中文ㄅㄆ" },
    {
      name: "Latin with digits and signs (Common goes with any script)",
      input: "ann_1984-x",
      expected: "ann_1984-x",
    },
    {
      name: "Hebrew with a geresh",
      input: "\u05d2\u05f3\u05d5\u05df",
      expected: "\u05d2\u05f3\u05d5\u05df",
    },
  ] as const;
  for (const c of taken) {
    it(`takes ${c.name}`, () =>
      assert.deepEqual(checkUsername(c.input), { kind: "valid", username: c.expected }));
  }

  it("is what prepareUsername lets log in, and so are the names accepted before it", () => {
    for (const c of taken) assert.equal(prepareUsername(c.input), c.expected);
    for (const old of ["p\u0430ypal", "\ud835\udc1admin", "\u01c6ango"]) {
      assert.equal(prepareUsername(old), old, "an existing user of this name still logs in");
    }
    for (const never of ["ab", "has space", "a/b", "henry\u2163"]) {
      assert.equal(prepareUsername(never), undefined, never);
    }
  });
});

// Writes lib/auth/_precis_table.ts: the Unicode data that user names are
// checked with (RFC 8264 IdentifierClass, RFC 8265, RFC 5893, UTS #39), as
// compact runs of code points. Usage: npm run unicode [-- <unpacked package>]
//
// Node's own ICU gives what JavaScript can ask of it: general categories,
// scripts and script extensions (regex property escapes), compatibility
// decompositions (normalize("NFKC")), canonical combining class 9 (read off
// canonical reordering), Default_Ignorable_Code_Point, Noncharacter_Code_Point
// and Join_Control. What it cannot (Bidi_Class, Joining_Type, the <wide> and
// <narrow> decompositions, blocks) comes from the npm package
// @unicode/unicode-<version> of the same Unicode version, which the script
// fetches with `npm pack` into a temporary folder unless given one; it is not
// a dependency. test/auth/names.test.ts checks the table against the runtime.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/** Code points there are: U+0000 to U+10FFFF. */
export const CODE_POINTS = 0x110000;

/**
 * Why RFC 8264 §8 gives a code point its derived property, one value per
 * rule (first match wins, in the RFC's order), so that a refusal can say why.
 */
export type PrecisCategory =
  | "exception-pvalid"
  | "exception-contexto"
  | "exception-disallowed"
  | "unassigned"
  | "ascii7"
  | "join-control"
  | "old-hangul-jamo"
  | "ignorable"
  | "control"
  | "has-compat"
  | "letter-digit"
  | "other-letter-digit"
  | "space"
  | "symbol"
  | "punctuation"
  | "other";

/** The Exceptions (F) of RFC 5892 §2.6, which RFC 8264 §9.6 takes over. */
const EXCEPTIONS: ReadonlyMap<number, PrecisCategory> = new Map<number, PrecisCategory>([
  ...[0x00df, 0x03c2, 0x06fd, 0x06fe, 0x0f0b, 0x3007].map((cp) =>
    [cp, "exception-pvalid"] as const
  ),
  ...[0x00b7, 0x0375, 0x05f3, 0x05f4, 0x30fb].map((cp) => [cp, "exception-contexto"] as const),
  ...range(0x0660, 0x0669).map((cp) => [cp, "exception-contexto"] as const),
  ...range(0x06f0, 0x06f9).map((cp) => [cp, "exception-contexto"] as const),
  ...[0x0640, 0x07fa, 0x302e, 0x302f, 0x3031, 0x3032, 0x3033, 0x3034, 0x3035, 0x303b].map((cp) =>
    [cp, "exception-disallowed"] as const
  ),
]);

/**
 * The blocks whose assigned code points are the conjoining jamo
 * (Hangul_Syllable_Type L, V and T: RFC 8264 §9.9, OldHangulJamo);
 * JavaScript has no property escape for the syllable type.
 */
export const JAMO_BLOCKS: readonly (readonly [number, number, string])[] = [
  [0x1100, 0x11ff, "Hangul_Jamo"],
  [0xa960, 0xa97f, "Hangul_Jamo_Extended_A"],
  [0xd7b0, 0xd7ff, "Hangul_Jamo_Extended_B"],
];

const UNASSIGNED = /^\p{Cn}$/u;
const NONCHARACTER = /^\p{Noncharacter_Code_Point}$/u;
const JOIN_CONTROL = /^\p{Join_Control}$/u;
const IGNORABLE = /^[\p{Default_Ignorable_Code_Point}\p{Noncharacter_Code_Point}]$/u;
const CONTROL = /^\p{Cc}$/u;
const SURROGATE = /^\p{Cs}$/u;
const LETTER_DIGIT = /^[\p{Ll}\p{Lu}\p{Lo}\p{Nd}\p{Lm}\p{Mn}\p{Mc}]$/u;
const OTHER_LETTER_DIGIT = /^[\p{Lt}\p{Nl}\p{No}\p{Me}]$/u;
const SPACE = /^\p{Zs}$/u;
const SYMBOL = /^[\p{Sm}\p{Sc}\p{Sk}\p{So}]$/u;
const PUNCTUATION = /^\p{P}$/u;

/**
 * The RFC 8264 §8 category of a code point, from this runtime's Unicode data.
 * @param cp the code point
 * @returns the rule that decides its derived property
 */
export function precisCategoryOf(cp: number): PrecisCategory {
  const exception = EXCEPTIONS.get(cp);
  if (exception !== undefined) return exception;
  const text = String.fromCodePoint(cp);
  if (UNASSIGNED.test(text) && !NONCHARACTER.test(text)) return "unassigned";
  if (cp >= 0x21 && cp <= 0x7e) return "ascii7";
  if (JOIN_CONTROL.test(text)) return "join-control";
  if (JAMO_BLOCKS.some(([first, last]) => cp >= first && cp <= last)) return "old-hangul-jamo";
  if (IGNORABLE.test(text)) return "ignorable";
  if (CONTROL.test(text)) return "control";
  // A lone surrogate is no character: it has no normalization to compare.
  if (SURROGATE.test(text)) return "other";
  if (text.normalize("NFKC") !== text) return "has-compat";
  if (LETTER_DIGIT.test(text)) return "letter-digit";
  if (OTHER_LETTER_DIGIT.test(text)) return "other-letter-digit";
  if (SPACE.test(text)) return "space";
  if (SYMBOL.test(text)) return "symbol";
  if (PUNCTUATION.test(text)) return "punctuation";
  return "other";
}

/**
 * Whether a category is valid in the IdentifierClass, alone (PVALID) or in
 * context (CONTEXTJ, CONTEXTO): only such code points' other properties matter.
 * @param category the category
 * @returns whether a user name may contain it
 */
export function isAllowedCategory(category: string): boolean {
  return ["exception-pvalid", "ascii7", "letter-digit", "join-control", "exception-contexto"]
    .includes(category);
}

const scriptPatterns = new Map<string, { sc: RegExp; scx: RegExp }>();

function patternsOf(name: string): { sc: RegExp; scx: RegExp } {
  let patterns = scriptPatterns.get(name);
  if (patterns === undefined) {
    patterns = {
      sc: new RegExp(`^\\p{Script=${name}}$`, "u"),
      scx: new RegExp(`^\\p{Script_Extensions=${name}}$`, "u"),
    };
    scriptPatterns.set(name, patterns);
  }
  return patterns;
}

/**
 * The Script of a code point, from this runtime.
 * @param cp the code point
 * @param names the Script values to try (long names, e.g. `Latin`)
 * @returns its name, or "Unknown"
 */
export function scriptOf(cp: number, names: readonly string[]): string {
  const text = String.fromCodePoint(cp);
  return names.find((name) => patternsOf(name).sc.test(text)) ?? "Unknown";
}

/**
 * The Script_Extensions of a code point, from this runtime.
 * @param cp the code point
 * @param names the Script values to try
 * @returns their names, sorted, space-separated
 */
export function scriptExtensionsOf(cp: number, names: readonly string[]): string {
  const text = String.fromCodePoint(cp);
  return names.filter((name) => patternsOf(name).scx.test(text)).sort().join(" ");
}

/**
 * Whether a code point's Canonical_Combining_Class is 9 (Virama), read off
 * how NFD reorders it against marks of classes 8 (U+3099) and 10 (U+05B0):
 * JavaScript has no property escape for the class.
 * @param cp the code point
 * @returns whether it is a virama
 */
export function isVirama(cp: number): boolean {
  if (cp === 0x3099 || cp === 0x05b0 || SURROGATE.test(String.fromCodePoint(cp))) return false;
  const mark = String.fromCodePoint(cp);
  if (mark.normalize("NFD") !== mark) return false;
  const above8 = `a${mark}\u3099`.normalize("NFD") === `a\u3099${mark}`;
  const below10 = `a\u05b0${mark}`.normalize("NFD") === `a${mark}\u05b0`;
  return above8 && below10;
}

/**
 * A table of one value per code point as runs: each run is its length in
 * base 36 followed by its value's index in `values` written in capital
 * letters (A, B, … Z, AA, AB, …), the runs cut into lines.
 */
export interface RunTable {
  readonly values: readonly string[];
  readonly runs: readonly string[];
}

/**
 * Encodes one value per code point as a {@linkcode RunTable}. A code point
 * whose value is `undefined` does not matter: it joins the run before it
 * (or, at the start, the first run).
 * @param valueOf the value of each code point
 * @returns the table
 */
export function encodeRuns(valueOf: (cp: number) => string | undefined): RunTable {
  const values: string[] = [];
  const index = new Map<string, number>();
  let text = "";
  let current: string | undefined;
  let length = 0;
  const flush = (): void => {
    if (length === 0) return;
    const value = current ?? "";
    let i = index.get(value);
    if (i === undefined) {
      i = values.length;
      values.push(value);
      index.set(value, i);
    }
    text += length.toString(36) + letters(i);
  };
  for (let cp = 0; cp < CODE_POINTS; cp++) {
    const value = valueOf(cp);
    if (value === undefined || current === undefined || value === current) {
      current ??= value;
      length++;
      continue;
    }
    flush();
    current = value;
    length = 1;
  }
  flush();
  const runs: string[] = [];
  // Lines end after a run, so that each line reads alone.
  for (const run of text.match(/[0-9a-z]+[A-Z]+/g) ?? []) {
    if (runs.length === 0 || runs[runs.length - 1]!.length + run.length > 90) runs.push(run);
    else runs[runs.length - 1] += run;
  }
  return { values, runs };
}

/** An index as capital letters: 0 → A, 25 → Z, 26 → AA. */
function letters(index: number): string {
  let text = "";
  for (let n = index + 1; n > 0; n = Math.floor((n - 1) / 26)) {
    text = String.fromCharCode(65 + ((n - 1) % 26)) + text;
  }
  return text;
}

function range(first: number, last: number): number[] {
  return Array.from({ length: last - first + 1 }, (_, i) => first + i);
}

/**
 * The runtime's Unicode version, in three parts.
 * @returns e.g. "17.0.0"
 */
export function runtimeUnicodeVersion(): string {
  const parts = (process.versions["unicode"] ?? "").split(".");
  while (parts.length < 3) parts.push("0");
  return parts.join(".");
}

const BIDI_SHORT: Readonly<Record<string, string>> = {
  Left_To_Right: "L",
  Right_To_Left: "R",
  Arabic_Letter: "AL",
  European_Number: "EN",
  European_Separator: "ES",
  European_Terminator: "ET",
  Arabic_Number: "AN",
  Common_Separator: "CS",
  Nonspacing_Mark: "NSM",
  Boundary_Neutral: "BN",
  Paragraph_Separator: "B",
  Segment_Separator: "S",
  White_Space: "WS",
  Other_Neutral: "ON",
  Left_To_Right_Embedding: "LRE",
  Left_To_Right_Override: "LRO",
  Right_To_Left_Embedding: "RLE",
  Right_To_Left_Override: "RLO",
  Pop_Directional_Format: "PDF",
  Left_To_Right_Isolate: "LRI",
  Right_To_Left_Isolate: "RLI",
  First_Strong_Isolate: "FSI",
  Pop_Directional_Isolate: "PDI",
};

const JOINING_SHORT: Readonly<Record<string, string>> = {
  Dual_Joining: "D",
  Join_Causing: "C",
  Left_Joining: "L",
  Right_Joining: "R",
  Transparent: "T",
  Non_Joining: "U",
};

async function load<T>(dir: string, ...path: string[]): Promise<T> {
  return ((await import(pathToFileURL(join(dir, ...path)).href)) as { default: T }).default;
}

/**
 * Renders the table module from this runtime and an unpacked
 * `@unicode/unicode-<version>` package of the runtime's Unicode version.
 * @param dir the package's folder
 * @returns the module's text
 * @throws {Error} when the package's Unicode version is not the runtime's
 */
export async function renderPrecisTable(dir: string): Promise<string> {
  const version = runtimeUnicodeVersion();
  const { name } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as { name: string };
  if (name !== `@unicode/unicode-${version}`) {
    throw new Error(`Cannot use ${name}: this runtime has Unicode ${version}`);
  }
  const scripts = readdirSync(join(dir, "Script")).filter((entry) => !entry.includes(".")).sort();
  const categories = new Array<PrecisCategory>(CODE_POINTS);
  for (let cp = 0; cp < CODE_POINTS; cp++) categories[cp] = precisCategoryOf(cp);
  for (const [first, last, block] of JAMO_BLOCKS) {
    const assigned = new Set(await load<number[]>(dir, "Block", block, "code-points.mjs"));
    for (let cp = first; cp <= last; cp++) {
      if (
        (categories[cp] === "old-hangul-jamo") !==
          (assigned.has(cp) && !UNASSIGNED.test(String.fromCodePoint(cp)))
      ) {
        throw new Error(
          `Cannot tell U+${hex(cp)} of ${block}: the package and the runtime disagree`,
        );
      }
    }
  }
  const allowed = (cp: number): boolean => isAllowedCategory(categories[cp]!);
  const bidi = await load<Map<number, string>>(dir, "Bidi_Class", "index.mjs");
  const joining = new Map<number, string>();
  for (const [type, short] of Object.entries(JOINING_SHORT)) {
    for (const cp of await load<number[]>(dir, "Joining_Type", type, "code-points.mjs")) {
      joining.set(cp, short);
    }
  }
  const width = new Map<number, number>();
  for (const kind of ["Wide", "Narrow"]) {
    for (
      const [cp, [to]] of await load<Map<number, number[]>>(
        dir,
        "Decomposition_Mapping",
        kind,
        "code-points.mjs",
      )
    ) width.set(cp, to! - cp);
  }
  let last = "Common";
  const scriptOfAllowed = (cp: number): string | undefined => {
    if (!allowed(cp)) return undefined;
    const text = String.fromCodePoint(cp);
    if (!patternsOf(last).sc.test(text)) last = scriptOf(cp, scripts);
    return last;
  };
  const tables: Record<string, { doc: string; table: RunTable }> = {
    PRECIS_CATEGORIES: {
      doc:
        "The RFC 8264 §8 rule that decides each code point's derived property (`precisCategoryOf` in scripts/precis_table.ts)",
      table: encodeRuns((cp) => categories[cp]),
    },
    BIDI_CLASSES: {
      doc:
        "The Bidi_Class (short names, e.g. `L`, `AL`, `NSM`) of the code points the IdentifierClass allows",
      table: encodeRuns((cp) => (allowed(cp) ? BIDI_SHORT[bidi.get(cp) ?? ""] ?? "L" : undefined)),
    },
    SCRIPTS: {
      doc: "The Script (long names, e.g. `Latin`) of the code points the IdentifierClass allows",
      table: encodeRuns(scriptOfAllowed),
    },
    SCRIPT_EXTENSIONS: {
      doc:
        'The Script_Extensions of the code points the IdentifierClass allows, where they are more than the Script ("" elsewhere)',
      table: encodeRuns((cp) => {
        if (!allowed(cp)) return undefined;
        const extensions = scriptExtensionsOf(cp, scripts);
        return extensions === scriptOf(cp, scripts) ? "" : extensions;
      }),
    },
    JOINING_TYPES: {
      doc:
        "The Joining_Type (`D`, `C`, `L`, `R`, `T` or `U`) of the code points the IdentifierClass allows",
      table: encodeRuns((cp) => (allowed(cp) ? joining.get(cp) ?? "U" : undefined)),
    },
    VIRAMAS: {
      doc: 'The code points of Canonical_Combining_Class 9 (Virama): `9`; "" elsewhere',
      table: encodeRuns((cp) => (isVirama(cp) ? "9" : "")),
    },
    WIDTH_MAPPINGS: {
      doc:
        'The fullwidth and halfwidth code points (decompositions `<wide>` and `<narrow>`): what to add to each to get its mapping; "" elsewhere',
      table: encodeRuns((cp) => String(width.get(cp) ?? "")),
    },
  };
  let text =
    `// Written by scripts/precis_table.ts (npm run unicode) from Unicode ${version}: Node ${process.versions.node}'s ICU ${
      process.versions["icu"]
    }\n`;
  text += `// and the npm package ${name}. Do not edit: run the script again.\n`;
  text += `\n/** The Unicode version of these tables. */\nexport const UNICODE_VERSION = ${
    JSON.stringify(version)
  };\n`;
  text += `\n/**\n * One value per code point as runs: each run is its length in base 36, then\n`;
  text +=
    ` * the index of its value in \`values\` in capital letters (A is 0, Z 25, AA 26).\n */\n`;
  text +=
    `export interface RunTable {\n  readonly values: readonly string[];\n  readonly runs: readonly string[];\n}\n`;
  for (const [constant, { doc, table }] of Object.entries(tables)) {
    text += `\n/**\n${
      wrap(`${doc}.`.split(" "), 0, 97).trimEnd().replace(/^/gm, " * ")
    }\n */\nexport const ${constant}: RunTable = {\n`;
    text += `  values: [\n${
      wrap(table.values.map((value) => `${JSON.stringify(value)},`), 4, 100)
    }  ],\n  runs: [\n`;
    for (const line of table.runs) text += `    "${line}",\n`;
    text += "  ],\n};\n";
  }
  return text;
}

/** Words joined by spaces into lines of at most `width` columns, indented. */
function wrap(words: readonly string[], indent: number, width: number): string {
  const lines: string[] = [];
  for (const word of words) {
    const last = lines.length - 1;
    if (last >= 0 && lines[last]!.length + 1 + word.length <= width) lines[last] += ` ${word}`;
    else lines.push(" ".repeat(indent) + word);
  }
  return lines.map((line) => `${line}\n`).join("");
}

function hex(cp: number): string {
  return cp.toString(16).toUpperCase().padStart(4, "0");
}

/**
 * Fetches `@unicode/unicode-<version>` with `npm pack` into a temporary folder and unpacks it.
 * @param version the Unicode version, e.g. "17.0.0"
 * @returns the unpacked package's folder and a function that removes it
 */
export function fetchUnicodePackage(version: string): { dir: string; remove: () => void } {
  const tmp = mkdtempSync(join(tmpdir(), "unicode-"));
  const file = execFileSync("npm", [
    "pack",
    `@unicode/unicode-${version}`,
    "--silent",
    "--pack-destination",
    tmp,
  ], { encoding: "utf8" }).trim();
  execFileSync("tar", ["xzf", join(tmp, file), "-C", tmp]);
  return { dir: join(tmp, "package"), remove: () => rmSync(tmp, { recursive: true, force: true }) };
}

if (process.argv[1] === import.meta.filename) {
  const given = process.argv[2];
  const source = given === undefined
    ? fetchUnicodePackage(runtimeUnicodeVersion())
    : { dir: given, remove: () => {} };
  try {
    if (!existsSync(join(source.dir, "Bidi_Class"))) {
      throw new Error(`Cannot find the Unicode data in ${source.dir}`);
    }
    const file = join(import.meta.dirname, "..", "lib", "auth", "_precis_table.ts");
    writeFileSync(file, await renderPrecisTable(source.dir));
    console.log(`Wrote ${file} (Unicode ${runtimeUnicodeVersion()})`);
  } finally {
    source.remove();
  }
}

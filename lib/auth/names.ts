/**
 * User names and passwords as people type them on real keyboards. A new
 * user name follows the PRECIS `UsernameCaseMapped` profile (RFC 8265 §3.3:
 * the IdentifierClass of RFC 8264, width and case mapping, NFC, the Bidi
 * Rule of RFC 5893) and must not mix scripts beyond what UTS #39's Highly
 * Restrictive level allows; passwords follow NIST SP 800-63B §5.1.1.2 (any
 * Unicode, counted in code points, NFKC-normalized before hashing). The
 * Unicode data is `_precis_table.ts`, written by scripts/precis_table.ts.
 */
import { CodePointTable } from "./_code_point_table.ts";
import {
  BIDI_CLASSES,
  JOINING_TYPES,
  PRECIS_CATEGORIES,
  SCRIPT_EXTENSIONS,
  SCRIPTS,
  UNICODE_VERSION,
  VIRAMAS,
  WIDTH_MAPPINGS,
} from "./_precis_table.ts";

/** The Unicode version user names are checked against (RFC 8264 derived properties, scripts, bidi classes). */
export const USERNAME_UNICODE_VERSION: string = UNICODE_VERSION;
/** Code points a user name has at least. */
export const MIN_USERNAME_LENGTH = 3;
/** Code points a user name has at most. */
export const MAX_USERNAME_LENGTH = 64;
/** Code points a password has at least (NIST SP 800-63B: 8). */
export const MIN_PASSWORD_LENGTH = 8;
/** Code points a password has at most (NIST asks for at least 64 accepted). */
export const MAX_PASSWORD_LENGTH = 128;
/** Languages a user's notifications may be in (`notify_language`; null for the default). */
export const NOTIFY_LANGUAGES: readonly string[] = ["en", "fr", "ru", "es", "de"];
/** The only ASCII punctuation and symbols a user name may have (so that e-mail addresses work). */
export const USERNAME_SIGNS = "._@+-";

/** An RFC 8264 derived property value, as the IdentifierClass has it (`ID_DIS` is `DISALLOWED`). */
export type PrecisProperty = "PVALID" | "CONTEXTJ" | "CONTEXTO" | "DISALLOWED" | "UNASSIGNED";

/**
 * Why a user name is refused:
 * - `empty`: nothing is left after the mappings (RFC 8265);
 * - `disallowed`: a code point the IdentifierClass disallows or has not assigned (RFC 8264);
 * - `context`: a joiner or sign allowed only in a context it is not in (RFC 5892 Appendix A);
 * - `bidi`: right-to-left text that breaks the Bidi Rule (RFC 5893 §2);
 * - `length`: fewer than 3 or more than 64 code points;
 * - `signs`: ASCII punctuation or a symbol other than `.`, `_`, `@`, `+` and `-`;
 * - `leading-mark`: a combining mark first;
 * - `mixed-script`: letters of scripts that UTS #39's Highly Restrictive level does not allow together.
 */
export type UsernameRule =
  | "empty"
  | "disallowed"
  | "context"
  | "bidi"
  | "length"
  | "signs"
  | "leading-mark"
  | "mixed-script";

/** The outcome of a user-name check: the name, or the rule it breaks and why. */
export type UsernameCheck =
  | { readonly kind: "valid"; readonly username: string }
  | {
    readonly kind: "invalid";
    readonly rule: UsernameRule;
    /** Says what is wrong and why, naming the character (and its code point) or the scripts. */
    readonly message: string;
    /** The code-point index of the character at fault in the mapped name, when one is. */
    readonly index?: number;
  };

interface Tables {
  readonly precis: CodePointTable;
  readonly bidi: CodePointTable;
  readonly scripts: CodePointTable;
  readonly extensions: CodePointTable;
  readonly joining: CodePointTable;
  readonly viramas: CodePointTable;
  readonly width: CodePointTable;
}

let decoded: Tables | undefined;

/** The tables, decoded at their first use (not at import). */
function tables(): Tables {
  decoded ??= {
    precis: new CodePointTable(PRECIS_CATEGORIES),
    bidi: new CodePointTable(BIDI_CLASSES),
    scripts: new CodePointTable(SCRIPTS),
    extensions: new CodePointTable(SCRIPT_EXTENSIONS),
    joining: new CodePointTable(JOINING_TYPES),
    viramas: new CodePointTable(VIRAMAS),
    width: new CodePointTable(WIDTH_MAPPINGS),
  };
  return decoded;
}

/** A code point this runtime has not assigned (its normalization and case mapping would not know it). */
const UNKNOWN_HERE = /^\p{Cn}$/u;

/**
 * The IdentifierClass derived property of a code point (RFC 8264 §8, from
 * Unicode {@linkcode USERNAME_UNICODE_VERSION}); a code point this runtime's
 * own Unicode data has not assigned is `UNASSIGNED` too.
 * @param codePoint from 0 to 0x10FFFF
 * @returns its property
 */
export function identifierProperty(codePoint: number): PrecisProperty {
  const category = tables().precis.get(codePoint);
  switch (category) {
    case "exception-pvalid":
    case "ascii7":
    case "letter-digit":
      return UNKNOWN_HERE.test(String.fromCodePoint(codePoint)) ? "UNASSIGNED" : "PVALID";
    case "join-control":
      return "CONTEXTJ";
    case "exception-contexto":
      return "CONTEXTO";
    case "unassigned":
      return "UNASSIGNED";
    default:
      return "DISALLOWED";
  }
}

/**
 * The width mapping of RFC 8265 §3.3.1 (RFC 8264 §9.11): each fullwidth or
 * halfwidth code point becomes its decomposition (`Ａ` → `A`, `ｶ` → `カ`).
 * @param text the text
 * @returns the text mapped
 */
export function mapWidth(text: string): string {
  const { width } = tables();
  let mapped = "";
  for (const char of text) {
    const cp = char.codePointAt(0)!;
    const offset = width.get(cp);
    mapped += offset === "" ? char : String.fromCodePoint(cp + Number(offset));
  }
  return mapped;
}

/**
 * Enforces the PRECIS `UsernameCasePreserved` profile (RFC 8265 §3.4.3):
 * width mapping, NFC, the IdentifierClass with its contextual rules, and the
 * Bidi Rule for a name with right-to-left characters. It is the name as
 * shown and stored.
 * @param input the name typed
 * @returns the enforced name, or why it is refused
 */
export function enforceUsernameCasePreserved(input: string): UsernameCheck {
  return enforce(mapWidth(input).normalize("NFC"));
}

/**
 * Enforces the PRECIS `UsernameCaseMapped` profile (RFC 8265 §3.3.3):
 * width mapping, lower case (Unicode toLowerCase), NFC, the IdentifierClass
 * with its contextual rules, and the Bidi Rule. Two names are one user when
 * their enforced forms are equal (RFC 8265 §3.3.4).
 * @param input the name typed
 * @returns the enforced name, or why it is refused
 */
export function enforceUsernameCaseMapped(input: string): UsernameCheck {
  return enforce(mapWidth(input).toLowerCase().normalize("NFC"));
}

/**
 * Checks a new user name, as sign-up does: both PRECIS username profiles
 * (RFC 8265), then 3 to 64 code points, no ASCII sign but `.`, `_`, `@`, `+`
 * and `-`, no combining mark first, and no mix of scripts beyond UTS #39's
 * Highly Restrictive level (Latin with Han and kana, with Han and Bopomofo,
 * or with Han and Hangul; Common and Inherited characters go with any).
 * Names accepted before these rules still log in: see {@linkcode prepareUsername}.
 * @param input the name typed
 * @returns the name as shown and stored (width-mapped, NFC, case kept), or the rule it breaks
 * @example
 * ```ts
 * checkUsername("ＡＮＮＡ"); // { kind: "valid", username: "ANNA" }
 * checkUsername("pаypal"); // { kind: "invalid", rule: "mixed-script", message: "User name mixes … Latin and Cyrillic …" }
 * ```
 */
export function checkUsername(input: string): UsernameCheck {
  const preserved = enforceUsernameCasePreserved(input);
  if (preserved.kind === "invalid") return preserved;
  const mapped = enforceUsernameCaseMapped(input);
  if (mapped.kind === "invalid") return mapped;
  const name = preserved.username;
  const chars = [...name];
  if (chars.length < MIN_USERNAME_LENGTH || chars.length > MAX_USERNAME_LENGTH) {
    return invalid(
      "length",
      `User name must be ${MIN_USERNAME_LENGTH} to ${MAX_USERNAME_LENGTH} characters: it has ${chars.length}`,
    );
  }
  const sign = chars.findIndex((char) =>
    char < "\x80" && !/[\p{L}\p{Nd}]/u.test(char) && !USERNAME_SIGNS.includes(char)
  );
  if (sign !== -1) {
    return invalid(
      "signs",
      `User name cannot contain ${describe(chars[sign]!)}: of punctuation and symbols only ${
        [...USERNAME_SIGNS].join(" ")
      } are allowed`,
      sign,
    );
  }
  if (/^\p{M}/u.test(name)) {
    return invalid(
      "leading-mark",
      `User name cannot start with the combining mark ${describe(chars[0]!)}`,
      0,
    );
  }
  return mixedScripts(chars) ?? { kind: "valid", username: name };
}

/** What sign-up accepted before names were checked against PRECIS and UTS #39 (letters, marks, digits and `._@+-`). */
const LEGACY_CHARACTERS = /^[\p{L}\p{Nd}._@+-][\p{L}\p{M}\p{Nd}._@+-]*$/u;

/**
 * Reads a user name typed at login: width-mapped and NFC, as it is stored.
 * It is lenient: any name sign-up ever accepted passes (so that users whose
 * names the PRECIS and UTS #39 checks now refuse still log in), and so does
 * every name {@linkcode checkUsername} accepts.
 * @param input the name typed
 * @returns the name, or undefined when no user can have it
 */
export function prepareUsername(input: string): string | undefined {
  const name = mapWidth(input).normalize("NFC");
  const length = codePoints(name);
  if (length < MIN_USERNAME_LENGTH || length > MAX_USERNAME_LENGTH) return undefined;
  return LEGACY_CHARACTERS.test(name) || checkUsername(name).kind === "valid" ? name : undefined;
}

/**
 * The key two names are the same user by (RFC 8265 `UsernameCaseMapped`):
 * the width-mapped name in NFC, lower-cased, then NFC again. "José", "JOSÉ"
 * and the decomposed "jose\u0301" have one key.
 * @param name a name (prepared or not)
 * @returns the key
 */
export function usernameKey(name: string): string {
  return mapWidth(name).normalize("NFC").toLowerCase().normalize("NFC");
}

/**
 * Prepares a password for hashing and checks its length: NFKC (so that one
 * password typed on two keyboards is one), counted in code points (an emoji is one).
 * @param input the password typed
 * @returns the password to hash, or undefined when it is shorter than 8 or longer than 128 code points
 */
export function preparePassword(input: string): string | undefined {
  const password = input.normalize("NFKC");
  const length = codePoints(password);
  return length < MIN_PASSWORD_LENGTH || length > MAX_PASSWORD_LENGTH ? undefined : password;
}

/** The checks every enforced profile ends with: not empty, the IdentifierClass with its contexts, and the Bidi Rule. */
function enforce(name: string): UsernameCheck {
  if (name === "") return invalid("empty", "User name is empty");
  const cps = [...name].map((char) => char.codePointAt(0)!);
  for (const [i, cp] of cps.entries()) {
    const property = identifierProperty(cp);
    if (property === "PVALID") continue;
    if (property === "CONTEXTJ" || property === "CONTEXTO") {
      const broken = contextRule(cps, i);
      if (broken !== undefined) {
        return invalid(
          "context",
          `User name cannot have ${describe(String.fromCodePoint(cp))} here: ${broken}`,
          i,
        );
      }
      continue;
    }
    return invalid(
      "disallowed",
      `User name cannot contain ${describe(String.fromCodePoint(cp))}: ${whyDisallowed(cp)}`,
      i,
    );
  }
  return bidiRule(cps) ?? { kind: "valid", username: name };
}

/** The contextual rule of RFC 5892 Appendix A for the code point at `i`: undefined when it holds, else what it asks. */
function contextRule(cps: readonly number[], i: number): string | undefined {
  const { joining, viramas, scripts } = tables();
  const cp = cps[i]!;
  const before = cps[i - 1];
  const after = cps[i + 1];
  const afterVirama = before !== undefined && viramas.get(before) === "9";
  switch (cp) {
    case 0x200c: {
      if (afterVirama) return undefined;
      // (Joining_Type:{L,D})(Joining_Type:T)*\u200C(Joining_Type:T)*(Joining_Type:{R,D})
      let left = i - 1;
      while (left >= 0 && joining.get(cps[left]!) === "T") left--;
      let right = i + 1;
      while (right < cps.length && joining.get(cps[right]!) === "T") right++;
      const joinsLeft = left >= 0 && ["L", "D"].includes(joining.get(cps[left]!));
      const joinsRight = right < cps.length && ["R", "D"].includes(joining.get(cps[right]!));
      return joinsLeft && joinsRight
        ? undefined
        : "a zero width non-joiner must follow a virama or stand between two joining letters (RFC 5892 A.1)";
    }
    case 0x200d:
      return afterVirama ? undefined : "a zero width joiner must follow a virama (RFC 5892 A.2)";
    case 0x00b7:
      return before === 0x6c && after === 0x6c
        ? undefined
        : "a middle dot must stand between two 'l', as in Catalan 'l·l' (RFC 5892 A.3)";
    case 0x0375:
      return after !== undefined && scripts.get(after) === "Greek"
        ? undefined
        : "the Greek keraia must come before a Greek letter (RFC 5892 A.4)";
    case 0x05f3:
    case 0x05f4:
      return before !== undefined && scripts.get(before) === "Hebrew"
        ? undefined
        : "a geresh or gershayim must follow a Hebrew letter (RFC 5892 A.5, A.6)";
    case 0x30fb:
      return cps.some((other) => ["Hiragana", "Katakana", "Han"].includes(scripts.get(other)))
        ? undefined
        : "a katakana middle dot needs Hiragana, Katakana or Han in the name (RFC 5892 A.7)";
    default:
      if (cp >= 0x0660 && cp <= 0x0669) {
        return cps.some((other) => other >= 0x06f0 && other <= 0x06f9)
          ? "Arabic-Indic digits cannot be mixed with extended ones (RFC 5892 A.8)"
          : undefined;
      }
      if (cp >= 0x06f0 && cp <= 0x06f9) {
        return cps.some((other) => other >= 0x0660 && other <= 0x0669)
          ? "extended Arabic-Indic digits cannot be mixed with Arabic-Indic ones (RFC 5892 A.9)"
          : undefined;
      }
      return "no contextual rule allows it";
  }
}

/** Bidi classes a right-to-left name may have (RFC 5893 §2, rule 2), and a left-to-right one (rule 5). */
const RTL_CLASSES = new Set(["R", "AL", "AN", "EN", "ES", "CS", "ET", "ON", "BN", "NSM"]);
const LTR_CLASSES = new Set(["L", "EN", "ES", "CS", "ET", "ON", "BN", "NSM"]);

/** The Bidi Rule (RFC 5893 §2), which RFC 8265 applies to a name with right-to-left characters: undefined when it holds. */
function bidiRule(cps: readonly number[]): UsernameCheck | undefined {
  const { bidi } = tables();
  const classes = cps.map((cp) => bidi.get(cp));
  if (!classes.some((c) => c === "R" || c === "AL" || c === "AN")) return undefined;
  const refuse = (rule: string, i?: number): UsernameCheck =>
    invalid(
      "bidi",
      `User name breaks the Bidi Rule for right-to-left text: ${rule} (RFC 5893 §2)`,
      i,
    );
  const first = classes[0]!;
  if (first !== "L" && first !== "R" && first !== "AL") {
    return refuse(`it must start with a letter, not ${describe(String.fromCodePoint(cps[0]!))}`, 0);
  }
  const rtl = first !== "L";
  const allowed = rtl ? RTL_CLASSES : LTR_CLASSES;
  const wrong = classes.findIndex((c) => !allowed.has(c));
  if (wrong !== -1) {
    const what = rtl
      ? "a right-to-left name cannot contain"
      : "a name that starts left-to-right cannot contain";
    return refuse(`${what} ${describe(String.fromCodePoint(cps[wrong]!))}`, wrong);
  }
  let last = classes.length - 1;
  while (last > 0 && classes[last] === "NSM") last--;
  const end = classes[last]!;
  if (rtl ? !["R", "AL", "EN", "AN"].includes(end) : !["L", "EN"].includes(end)) {
    return refuse(`it cannot end with ${describe(String.fromCodePoint(cps[last]!))}`, last);
  }
  if (rtl && classes.includes("EN") && classes.includes("AN")) {
    return refuse("European and Arabic-Indic digits cannot be mixed");
  }
  return undefined;
}

/**
 * The scripts that UTS #39 (§5.1) adds to a character's: writing systems
 * that combine scripts, so that a Japanese, Chinese or Korean name is one.
 */
const AUGMENTED: Readonly<Record<string, readonly string[]>> = {
  Han: ["Han with Bopomofo", "Japanese", "Korean"],
  Hiragana: ["Japanese"],
  Katakana: ["Japanese"],
  Hangul: ["Korean"],
  Bopomofo: ["Han with Bopomofo"],
};

/** A character's augmented script set (UTS #39 §5.1), or undefined for Common and Inherited (any script). */
function scriptSetOf(cp: number): ReadonlySet<string> | undefined {
  const { scripts, extensions } = tables();
  const names = (extensions.get(cp) || scripts.get(cp)).split(" ");
  if (names.includes("Common") || names.includes("Inherited")) return undefined;
  return new Set(names.flatMap((name) => [name, ...(AUGMENTED[name] ?? [])]));
}

/**
 * UTS #39 mixed-script detection at the Highly Restrictive level (§5.2):
 * undefined when the name's resolved script set is not empty, or is not
 * without Latin and holds Han with Bopomofo, Japanese or Korean; else why.
 */
function mixedScripts(chars: readonly string[]): UsernameCheck | undefined {
  const sets = chars.map((char) => scriptSetOf(char.codePointAt(0)!));
  const resolve = (skip: (set: ReadonlySet<string>) => boolean): Set<string> | undefined => {
    let resolved: Set<string> | undefined;
    for (const set of sets) {
      if (set === undefined || skip(set)) continue;
      resolved = resolved === undefined
        ? new Set(set)
        : new Set([...resolved].filter((name) => set.has(name)));
    }
    return resolved;
  };
  const all = resolve(() => false);
  if (all === undefined || all.size > 0) return undefined;
  const withoutLatin = resolve((set) => set.has("Latin"));
  if (
    withoutLatin === undefined ||
    ["Han with Bopomofo", "Japanese", "Korean"].some((name) => withoutLatin.has(name))
  ) return undefined;
  // Name each character's own script (its Script, or its first extension when that is Common or
  // Inherited), and point at a character of the script fewest characters have: the odd one out.
  const { scripts, extensions } = tables();
  const named: string[] = [];
  const counts = new Map<string, { count: number; first: number }>();
  for (const [i, char] of chars.entries()) {
    if (sets[i] === undefined) continue;
    const cp = char.codePointAt(0)!;
    const script = scripts.get(cp);
    const own =
      (script === "Common" || script === "Inherited" ? extensions.get(cp).split(" ")[0]! : script)
        .replace(/_/g, " ");
    const seen = counts.get(own);
    if (seen === undefined) {
      named.push(own);
      counts.set(own, { count: 1, first: i });
    } else seen.count++;
  }
  const odd = named.reduce(
    (a, b) => (counts.get(b)!.count < counts.get(a)!.count ? b : a),
    named[named.length - 1]!,
  );
  const culprit = named.length < 2 ? -1 : counts.get(odd)!.first;
  const list = named.length < 2
    ? ""
    : ` the ${named.slice(0, -1).join(", ")} and ${named[named.length - 1]} scripts`;
  const example = culprit === -1 ? "" : ` (${describe(chars[culprit]!)} is ${odd})`;
  return invalid(
    "mixed-script",
    `User name mixes${list || " scripts"}${example}: its letters must come from one script, ` +
      "or be Latin with Han, Hiragana and Katakana, with Han and Bopomofo, or with Han and Hangul (UTS #39, highly restrictive)",
    culprit === -1 ? undefined : culprit,
  );
}

/** Says why the IdentifierClass disallows a code point. */
function whyDisallowed(cp: number): string {
  const char = String.fromCodePoint(cp);
  const category = tables().precis.get(cp);
  if (category === "unassigned" || UNKNOWN_HERE.test(char)) {
    return `it is not assigned in Unicode ${UNICODE_VERSION}`;
  }
  switch (category) {
    case "has-compat":
      return `it is a compatibility form of ${
        JSON.stringify(char.normalize("NFKC"))
      }; type that instead (RFC 8264 IdentifierClass)`;
    case "other-letter-digit":
      return `${
        /\p{Lt}/u.test(char)
          ? "titlecase letters"
          : /\p{Me}/u.test(char)
          ? "enclosing marks"
          : "numbers other than digits"
      } are not allowed (RFC 8264 IdentifierClass)`;
    case "space":
      return "spaces are not allowed";
    case "symbol":
      return "symbols are not allowed (RFC 8264 IdentifierClass)";
    case "punctuation":
      return "punctuation is not allowed (RFC 8264 IdentifierClass)";
    case "control":
      return "control characters are not allowed";
    case "ignorable":
      return "invisible characters are not allowed (RFC 8264 IdentifierClass)";
    case "old-hangul-jamo":
      return "conjoining Hangul jamo are not allowed; type the syllable instead (RFC 8264 IdentifierClass)";
    default:
      return "it is not allowed in identifiers (RFC 8264 IdentifierClass)";
  }
}

/** A character for a message: itself when it shows, and its code point. */
function describe(char: string): string {
  const code = `U+${char.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}`;
  return /^[\p{L}\p{N}\p{P}\p{S}]$/u.test(char) ? `'${char}' (${code})` : code;
}

function invalid(rule: UsernameRule, message: string, index?: number): UsernameCheck {
  return index === undefined
    ? { kind: "invalid", rule, message }
    : { kind: "invalid", rule, message, index };
}

/** Code points in `text`: what people count as characters, an astral emoji as one. */
function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

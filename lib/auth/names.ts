/**
 * User names and passwords as people type them on real keyboards: user
 * names follow the PRECIS `UsernameCaseMapped` profile (RFC 8265 §3.3), and
 * passwords NIST SP 800-63B §5.1.1.2 (any Unicode, counted in code points,
 * NFKC-normalized before hashing).
 */

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

/**
 * What a prepared user name is made of: letters with their combining marks,
 * decimal digits, and `.`, `_`, `-`, `@`, `+` (so that e-mail addresses
 * work), starting with a letter, a digit or one of those signs, never a mark.
 */
const USERNAME_CHARACTERS = /^[\p{L}\p{Nd}._@+-][\p{L}\p{M}\p{Nd}._@+-]*$/u;
/** Fullwidth and halfwidth forms, mapped to their decomposition (RFC 8265 §3.3.1, width mapping). */
const WIDE_OR_NARROW = /[\uff01-\uffef]/gu;

/**
 * Prepares a user name as it is shown and stored: fullwidth and halfwidth
 * forms mapped to their usual width, then NFC. The case is kept.
 * @param input the name typed
 * @returns the name, or undefined when it is not one (characters or length)
 */
export function prepareUsername(input: string): string | undefined {
  const name = input.replace(WIDE_OR_NARROW, (c) => c.normalize("NFKC")).normalize("NFC");
  const length = codePoints(name);
  if (length < MIN_USERNAME_LENGTH || length > MAX_USERNAME_LENGTH || !USERNAME_CHARACTERS.test(name)) return undefined;
  return name;
}

/**
 * The key two names are the same user by (RFC 8265 `UsernameCaseMapped`):
 * the prepared name, lower-cased, then NFC again. "José", "JOSÉ" and the
 * decomposed "jose\u0301" have one key.
 * @param name a name (prepared or not)
 * @returns the key
 */
export function usernameKey(name: string): string {
  return name.replace(WIDE_OR_NARROW, (c) => c.normalize("NFKC")).normalize("NFC").toLowerCase().normalize("NFC");
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

/** Code points in `text`: what people count as characters, an astral emoji as one. */
function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

import { sha256Hex } from "../crypto/mod.ts";

/** Characters of a token: 43 base64url characters carry 258 random bits. */
const TOKEN_LENGTH = 43;
/** Tokens cut from one draw of random bytes. */
const TOKENS_PER_BLOCK = 64;

/**
 * Makes opaque tokens of 43 base64url characters (258 random bits). Tokens
 * are cut from a block of random bytes encoded at once, so that one draw and
 * one encoding serve many tokens; every character is used once.
 */
export class TokenMint {
  readonly #random: (size: number) => Uint8Array;
  #text = "";
  #at = 0;

  /**
   * Creates a mint.
   * @param random gives cryptographically secure random bytes
   */
  constructor(random: (size: number) => Uint8Array) {
    this.#random = random;
  }

  /**
   * Makes a token.
   * @returns 43 fresh base64url characters
   */
  next(): string {
    if (this.#at + TOKEN_LENGTH > this.#text.length) {
      // 3 bytes encode as 4 characters: a whole number of tokens, no padding.
      const bytes = this.#random((TOKEN_LENGTH * TOKENS_PER_BLOCK * 3) / 4);
      this.#text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64url");
      this.#at = 0;
    }
    const token = this.#text.slice(this.#at, this.#at + TOKEN_LENGTH);
    this.#at += TOKEN_LENGTH;
    return token;
  }
}

/**
 * The SHA-256 (hex) under which a token is stored; the token itself never is.
 * @param token the token
 * @returns its hash
 */
export function tokenHash(token: string): string {
  return sha256Hex(token);
}

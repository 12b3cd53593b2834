import { type HttpRequest } from "../http/mod.ts";
import { parseQuery } from "../http/_internal.ts";
import { AuthError } from "./errors.ts";
import type { BasicCredentials, TokenRequest } from "./token_service.ts";

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Options of {@linkcode readTokenRequest}. */
export interface ReadTokenRequestOptions {
  /**
   * Largest accepted body.
   * @default {65536}
   */
  maxBytes?: number;
}

/**
 * Reads a token, revocation or introspection request: a form
 * (`application/x-www-form-urlencoded`, what RFC 6749 and real clients send)
 * or a flat JSON object of strings (what the original API documents), with
 * the same meaning. A repeated parameter is refused; one sent without a
 * value counts as absent (RFC 6749 §3.2). HTTP Basic credentials are
 * form-url-decoded after base64, as RFC 6749 Appendix B asks.
 * @param request the HTTP request
 * @param options body limit
 * @returns the parsed request
 * @throws {AuthError} `ERR_AUTH_INVALID_REQUEST` for a wrong content type, a
 * malformed body, or a repeated parameter
 * @throws {HttpError} `ERR_HTTP_BODY_TOO_LARGE` for a body above the limit
 */
export async function readTokenRequest(
  request: HttpRequest,
  options: ReadTokenRequestOptions = {},
): Promise<TokenRequest> {
  const type = mediaType(request.headers["content-type"]);
  const form = type === FORM;
  if (!form && type !== "application/json") {
    throw invalid("Send the parameters as application/x-www-form-urlencoded or application/json");
  }
  const bytes = await request.body.bytes(options.maxBytes ?? 65_536);
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch (cause) {
    throw new AuthError("ERR_AUTH_INVALID_REQUEST", "The body is not valid UTF-8", { cause });
  }
  const params = form ? formParams(text) : jsonParams(text);
  return {
    params,
    basic: basicCredentials(request.headers["authorization"]),
    address: request.remoteAddress,
  };
}

const FORM = "application/x-www-form-urlencoded";

/** A Content-Type's media type, lower case, without parameters; the usual exact header at once. */
function mediaType(header: string | undefined): string {
  if (header === undefined) return "";
  if (header === FORM || header === "application/json") return header;
  return header.split(";")[0]!.trim().toLowerCase();
}

function formParams(text: string): Map<string, string> {
  let pairs;
  try {
    pairs = parseQuery(text);
  } catch (cause) {
    throw new AuthError("ERR_AUTH_INVALID_REQUEST", "The form body holds a broken percent escape", {
      cause,
    });
  }
  const params = new Map<string, string>();
  for (const { name, value } of pairs) {
    if (params.has(name)) throw invalid(`Parameter ${safe(name)} is repeated`);
    params.set(name, value);
  }
  // Sent without a value counts as absent (RFC 6749 §3.2), after the repetition check.
  for (const [name, value] of params) if (value === "") params.delete(name);
  return params;
}

/** A flat JSON object of strings (or nulls), refusing repeated keys, which JSON.parse would hide. */
function jsonParams(text: string): Map<string, string> {
  const params = new Map<string, string>();
  const seen = new Set<string>();
  let i = skip(text, 0);
  if (text[i] !== "{") throw invalid("The JSON body must be an object of string parameters");
  i = skip(text, i + 1);
  if (text[i] === "}") return end(text, i + 1, params);
  for (;;) {
    const key = readString(text, i);
    i = skip(text, key.end);
    if (text[i] !== ":") throw invalid("The JSON body is malformed");
    i = skip(text, i + 1);
    let value: string | null;
    if (text.startsWith("null", i)) {
      value = null;
      i += 4;
    } else if (text[i] === '"') {
      const read = readString(text, i);
      value = read.value;
      i = read.end;
    } else {
      throw invalid(`Parameter ${safe(key.value)} must be a string`);
    }
    if (seen.has(key.value)) throw invalid(`Parameter ${safe(key.value)} is repeated`);
    seen.add(key.value);
    if (value !== null && value !== "") params.set(key.value, value);
    i = skip(text, i);
    if (text[i] === ",") {
      i = skip(text, i + 1);
      continue;
    }
    if (text[i] === "}") return end(text, i + 1, params);
    throw invalid("The JSON body is malformed");
  }
}

// deno-lint-ignore no-control-regex -- a JSON string holds no raw control character
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;

function readString(text: string, at: number): { value: string; end: number } {
  STRING.lastIndex = at;
  if (!STRING.test(text)) throw invalid("The JSON body is malformed");
  return { value: JSON.parse(text.slice(at, STRING.lastIndex)) as string, end: STRING.lastIndex };
}

function skip(text: string, at: number): number {
  let i = at;
  while (i < text.length && " \t\r\n".includes(text[i]!)) i++;
  return i;
}

function end(text: string, at: number, params: Map<string, string>): Map<string, string> {
  if (skip(text, at) !== text.length) throw invalid("The JSON body is malformed");
  return params;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/** Credentials of an `Authorization: Basic` header; undefined for none or another scheme. */
function basicCredentials(header: string | undefined): BasicCredentials | undefined {
  if (header === undefined) return undefined;
  // A back end sends the same header with every grant: decoded once, kept (bounded), found by one lookup.
  let known = decoded.get(header);
  if (known === undefined) {
    const credentials = decodeBasic(header);
    known = credentials === undefined ? null : Object.freeze(credentials);
    if (decoded.size >= MAX_DECODED) decoded.clear();
    decoded.set(header, known);
  }
  return known ?? undefined;
}

/** Basic headers decoded lately (null: another scheme); a header that throws is never kept. */
const decoded = new Map<string, BasicCredentials | null>();
const MAX_DECODED = 1024;

function decodeBasic(header: string): BasicCredentials | undefined {
  const match = /^Basic[ ]+(\S+)\s*$/i.exec(header);
  if (match === null) return undefined;
  const encoded = match[1]!;
  if (!BASE64.test(encoded) || encoded.length % 4 !== 0) {
    throw invalid("The Basic credentials are not valid base64");
  }
  let decoded = atob(encoded);
  // Non-ASCII bytes are UTF-8 to decode; plain ASCII (the usual case) is already text.
  // deno-lint-ignore no-control-regex -- the range is ASCII, control characters included
  if (/[^\x00-\x7f]/.test(decoded)) {
    try {
      decoded = utf8.decode(Uint8Array.from(decoded, (c) => c.charCodeAt(0)));
    } catch (cause) {
      throw new AuthError("ERR_AUTH_INVALID_REQUEST", "The Basic credentials are not valid UTF-8", {
        cause,
      });
    }
  }
  const colon = decoded.indexOf(":");
  if (colon === -1) throw invalid("The Basic credentials need client_id:client_secret");
  return { id: formDecode(decoded.slice(0, colon)), secret: formDecode(decoded.slice(colon + 1)) };
}

function formDecode(text: string): string {
  if (!text.includes("%") && !text.includes("+")) return text;
  try {
    return decodeURIComponent(text.replaceAll("+", " "));
  } catch (cause) {
    throw new AuthError(
      "ERR_AUTH_INVALID_REQUEST",
      "The Basic credentials hold a broken percent escape",
      { cause },
    );
  }
}

function invalid(message: string): AuthError {
  return new AuthError("ERR_AUTH_INVALID_REQUEST", message);
}

/** Request text fit for an error_description (RFC 6749 allows %x20-21 / %x23-5B / %x5D-7E). */
function safe(text: string): string {
  return `'${text.slice(0, 64).replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, "?")}'`;
}

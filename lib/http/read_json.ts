import { HttpError } from "./errors.ts";
import type { HttpRequest } from "./types.ts";

/** Options of {@linkcode readJson}. */
export interface ReadJsonOptions {
  /**
   * Largest accepted body in bytes.
   * @default {1048576}
   */
  maxBytes?: number;
  /**
   * Deepest accepted nesting of arrays and objects.
   * @default {32}
   */
  maxDepth?: number;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads a request body as JSON, refusing a wrong content type, an oversize
 * body, invalid UTF-8 or JSON, and nesting deeper than `maxDepth` (checked
 * before parsing, so hostile input cannot exhaust the stack).
 * @param request the request
 * @param options limits
 * @returns the parsed value
 * @throws {HttpError} `ERR_HTTP_UNSUPPORTED_MEDIA_TYPE`, `ERR_HTTP_BODY_TOO_LARGE`,
 * `ERR_HTTP_INVALID_JSON` or `ERR_HTTP_JSON_TOO_DEEP`
 */
export async function readJson(
  request: HttpRequest,
  options: ReadJsonOptions = {},
): Promise<unknown> {
  const type = (request.headers["content-type"] ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json" && !type.endsWith("+json")) {
    throw new HttpError(
      "ERR_HTTP_UNSUPPORTED_MEDIA_TYPE",
      `Cannot read the body: expected Content-Type application/json but found "${type || "none"}"`,
    );
  }
  const bytes = await request.body.bytes(options.maxBytes ?? 1_048_576);
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch (cause) {
    throw new HttpError("ERR_HTTP_INVALID_JSON", "Cannot read the body: it is not valid UTF-8", {
      cause,
    });
  }
  checkJsonDepth(text, options.maxDepth ?? 32);
  try {
    return JSON.parse(text);
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause);
    throw new HttpError("ERR_HTTP_INVALID_JSON", `Cannot parse the body as JSON: ${message}`, {
      cause,
    });
  }
}

/**
 * Refuses JSON text nested deeper than `maxDepth`, without parsing it.
 * @param text JSON text
 * @param maxDepth deepest accepted nesting
 * @throws {HttpError} `ERR_HTTP_JSON_TOO_DEEP`
 */
export function checkJsonDepth(text: string, maxDepth: number): void {
  // Nesting deeper than maxDepth needs more than maxDepth opening brackets;
  // counting them with indexOf (native) spares most bodies the scan below.
  if (!hasMoreThan(text, maxDepth)) return;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) {
        throw new HttpError(
          "ERR_HTTP_JSON_TOO_DEEP",
          `Cannot read the body: JSON nesting exceeds ${maxDepth} levels at position ${i}`,
        );
      }
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
}

/** Whether `text` holds more than `count` of the characters `{` and `[` together. */
function hasMoreThan(text: string, count: number): boolean {
  let found = 0;
  for (const bracket of ["{", "["]) {
    for (let at = text.indexOf(bracket); at !== -1; at = text.indexOf(bracket, at + 1)) {
      if (++found > count) return true;
    }
  }
  return false;
}

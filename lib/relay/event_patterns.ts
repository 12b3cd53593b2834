import { RelayError } from "./errors.ts";

/** An event name: dot-separated words of letters, digits, `_`, `-` and `:`. */
export const EVENT_NAME = /^[A-Za-z0-9_:-]+(?:\.[A-Za-z0-9_:-]+)*$/;

/** Longest accepted event name. */
export const MAX_EVENT_LENGTH = 200;

const PREFIX_PATTERN = /^[A-Za-z0-9_:-]+(?:\.[A-Za-z0-9_:-]+)*\.\*$/;

/** A compiled set of event patterns: answers whether an event matches in O(words). */
export interface EventMatcher {
  readonly patterns: readonly string[];
  matches(event: string): boolean;
}

/**
 * Checks and compiles an endpoint's event patterns: `*` for every event, an
 * exact name (`invoice.paid`), or a prefix ending in `.*` (`invoice.*`
 * matches `invoice.paid` and `invoice.line.added`, not `invoice`).
 * @param patterns the patterns, at least one
 * @param field where they came from, for errors
 * @returns the matcher
 * @throws {RelayError} `ERR_RELAY_INVALID_ENDPOINT` for an empty list or a malformed pattern
 */
export function compileEventPatterns(patterns: readonly unknown[], field = "events"): EventMatcher {
  if (patterns.length === 0) {
    throw new RelayError(
      "ERR_RELAY_INVALID_ENDPOINT",
      `Cannot use ${field}: list at least one event pattern, or "*" for all`,
      { target: field },
    );
  }
  const exact = new Set<string>();
  const prefixes = new Set<string>();
  let all = false;
  for (const [i, pattern] of patterns.entries()) {
    if (typeof pattern !== "string" || pattern.length > MAX_EVENT_LENGTH) {
      throw invalidPattern(
        `${field}[${i}]`,
        typeof pattern === "string" ? "it is too long" : "it is not a string",
      );
    }
    if (pattern === "*") all = true;
    else if (EVENT_NAME.test(pattern)) exact.add(pattern);
    else if (PREFIX_PATTERN.test(pattern)) prefixes.add(pattern.slice(0, -1));
    else {throw invalidPattern(
        `${field}[${i}]`,
        `${JSON.stringify(pattern)} is not "*", an event name or a prefix ending in ".*"`,
      );}
  }
  const list = patterns as readonly string[];
  if (all) return { patterns: list, matches: () => true };
  return {
    patterns: list,
    matches(event: string): boolean {
      if (exact.has(event)) return true;
      if (prefixes.size === 0) return false;
      for (let dot = event.indexOf("."); dot !== -1; dot = event.indexOf(".", dot + 1)) {
        if (prefixes.has(event.slice(0, dot + 1))) return true;
      }
      return false;
    },
  };
}

function invalidPattern(field: string, why: string): RelayError {
  return new RelayError(
    "ERR_RELAY_INVALID_ENDPOINT",
    `Cannot use the event pattern ${field}: ${why}`,
    { target: field },
  );
}

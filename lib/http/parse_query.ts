import { HttpError } from "./errors.ts";

/** One decoded `name=value` pair of a query string. */
export interface QueryParameter {
  readonly name: string;
  readonly value: string;
}

/**
 * Splits and decodes a raw query string. Both `+` and `%20` decode to a
 * space, as HTML forms and `URLSearchParams` do, so clients that encode either
 * way are read alike. Empty pairs (`a=1&&b=2`) are skipped.
 * @param raw the query without its leading `?`
 * @returns the parameters in order
 * @throws {HttpError} `ERR_HTTP_MALFORMED_URL` on a broken percent escape
 * @example
 * ```ts
 * parseQuery("%24top=10&$filter=Name+eq+'x'");
 * // [{ name: "$top", value: "10" }, { name: "$filter", value: "Name eq 'x'" }]
 * ```
 */
export function parseQuery(raw: string): readonly QueryParameter[] {
  const parameters: QueryParameter[] = [];
  if (raw === "") return parameters;
  for (const pair of raw.split("&")) {
    if (pair === "") continue;
    const equals = pair.indexOf("=");
    const rawName = equals === -1 ? pair : pair.slice(0, equals);
    const rawValue = equals === -1 ? "" : pair.slice(equals + 1);
    const name = decodeComponent(rawName, rawName);
    parameters.push({ name, value: decodeComponent(rawValue, name) });
  }
  return parameters;
}

/**
 * Decodes one percent-encoded component, `+` meaning space.
 * @param text the encoded text
 * @param target what to name in the error
 * @returns the decoded text
 * @throws {HttpError} `ERR_HTTP_MALFORMED_URL`
 */
export function decodeComponent(text: string, target: string): string {
  const spaced = text.includes("+") ? text.replaceAll("+", " ") : text;
  if (!spaced.includes("%")) return spaced;
  try {
    return decodeURIComponent(spaced);
  } catch {
    throw new HttpError(
      "ERR_HTTP_MALFORMED_URL",
      `Cannot decode the URL: "${text}" holds a broken percent escape; encode "%" as "%25"`,
      { target },
    );
  }
}

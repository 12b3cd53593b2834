/**
 * Reads an origin: a scheme (`http` or `https`), a host and an optional port,
 * without a path; a trailing slash is dropped.
 * @param text the origin, e.g. `https://app.example.org`
 * @returns the origin in its canonical form
 * @throws {TypeError} when the text is not such an origin
 * @example
 * ```ts
 * parseOrigin("https://API.example.org:443/"); // "https://api.example.org"
 * ```
 */
export function parseOrigin(text: string): string {
  const url = URL.parse(text);
  if (
    url === null || (url.protocol !== "http:" && url.protocol !== "https:") ||
    text.replace(/\/$/, "") !== url.origin
  ) {
    throw new TypeError(
      `Cannot read origin "${text}": expected a scheme, a host and an optional port, without a path`,
    );
  }
  return url.origin;
}

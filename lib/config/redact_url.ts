/**
 * A URL with its password hidden, for messages and logs.
 * @param value a URL, or any text
 * @returns the URL with `***` for its password; the text as given when it is not a URL
 * @example
 * ```ts
 * redactUrl("redis://app:s3cret@db:6379"); // "redis://app:***@db:6379"
 * ```
 */
export function redactUrl(value: string): string {
  const url = URL.parse(value);
  if (url === null || url.password === "") return value;
  url.password = "***";
  return url.href;
}

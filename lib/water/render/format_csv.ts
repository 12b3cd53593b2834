const NEEDS_QUOTES = /[",\r\n]/;

/**
 * Writes one CSV field per RFC 4180: quoted when it holds a comma, quote or
 * line break, with quotes doubled; null is an empty field.
 * @param value the field
 * @returns the encoded field
 */
export function formatCsvField(value: string | number | boolean | null | undefined): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "string" ? value : String(value);
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/**
 * Writes one CSV record, ending with CRLF as RFC 4180 asks.
 * @param values the fields
 * @returns the encoded record
 * @example
 * ```ts
 * formatCsvRow(["Temperature, water", 12.5, null]); // '"Temperature, water",12.5,\r\n'
 * ```
 */
export function formatCsvRow(
  values: readonly (string | number | boolean | null | undefined)[],
): string {
  let out = "";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ",";
    out += formatCsvField(values[i]);
  }
  return out + "\r\n";
}

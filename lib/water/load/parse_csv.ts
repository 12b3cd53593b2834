import { CsvScanner, FIELD_ESCAPED, FIELD_PLAIN, unescapeField } from "./csv_scanner.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Parses RFC 4180 CSV text into rows of strings: quoted fields with embedded
 * commas, quotes and line breaks, CRLF or LF line ends, and a leading byte
 * order mark. Blank lines are skipped.
 * @param text the CSV text
 * @returns the records, each an array of fields
 * @throws {CsvSyntaxError} with the line and column of malformed input
 * @example
 * ```ts
 * parseCsv('name,value\r\n"Temperature, water",12\r\n');
 * // [["name", "value"], ["Temperature, water", "12"]]
 * ```
 */
export function parseCsv(text: string): string[][] {
  const bytes = encoder.encode(text);
  const scanner = new CsvScanner();
  const rows: string[][] = [];
  let pos = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf
    ? 3
    : 0;
  const scratch = new Uint8Array(bytes.length);
  while (pos < bytes.length) {
    const next = scanner.scan(bytes, pos, bytes.length, true);
    const blank = scanner.count === 1 && scanner.kinds[0] === FIELD_PLAIN &&
      scanner.starts[0] === scanner.ends[0];
    if (!blank) {
      const row: string[] = [];
      for (let f = 0; f < scanner.count; f++) {
        const start = scanner.starts[f]!;
        const end = scanner.ends[f]!;
        if (scanner.kinds[f] === FIELD_ESCAPED) {
          const n = unescapeField(bytes, start, end, scratch);
          row.push(decoder.decode(scratch.subarray(0, n)));
        } else {
          row.push(decoder.decode(bytes.subarray(start, end)));
        }
      }
      rows.push(row);
    }
    scanner.line += scanner.lineBreaks;
    pos = next;
  }
  return rows;
}

import { CsvSyntaxError } from "../errors.ts";
import { REQUIRED_CSV_COLUMNS } from "../fields.ts";
import { CsvScanner, FIELD_ESCAPED, unescapeField } from "../load/csv_scanner.ts";

/**
 * Checks a data file's header names as loading does: no name twice, every
 * required column there.
 * @param names the header's names, trimmed
 * @returns the names, as a set
 * @throws {CsvSyntaxError} naming the column at fault
 */
export function checkHeaderNames(names: readonly string[]): Set<string> {
  const seen = new Set<string>();
  for (let f = 0; f < names.length; f++) {
    if (seen.has(names[f]!)) {
      throw new CsvSyntaxError(`found column "${names[f]}" twice in the header`, 1, f + 1, 0);
    }
    seen.add(names[f]!);
  }
  for (const required of REQUIRED_CSV_COLUMNS) {
    if (!seen.has(required)) {
      throw new CsvSyntaxError(
        `found no "${required}" column in the header; it is required`,
        1,
        names.length + 1,
        0,
      );
    }
  }
  return seen;
}

/**
 * Checks the header of a DataStream data file from its first bytes, as
 * `StoreBuilder` would when loading it, without loading anything.
 * @param bytes the file's first bytes
 * @param final whether they are the whole file
 * @returns true when the header is there and usable; false when it goes on past `bytes`
 * @throws {CsvSyntaxError} for a header that cannot be used, or none
 */
export function checkDataHeader(bytes: Uint8Array, final: boolean): boolean {
  if (bytes.length < 3 && !final) return false;
  const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
  if (bytes.length - start === 0) {
    if (final) throw new CsvSyntaxError("found no header row", 1, 1, 0);
    return false;
  }
  const scanner = new CsvScanner();
  if (scanner.scan(bytes, start, bytes.length, final) === -1) return false;
  const names: string[] = [];
  const scratch = new Uint8Array(bytes.length);
  for (let f = 0; f < scanner.count; f++) {
    const from = scanner.starts[f]!;
    const to = scanner.ends[f]!;
    const field = scanner.kinds[f] === FIELD_ESCAPED
      ? scratch.subarray(0, unescapeField(bytes, from, to, scratch))
      : bytes.subarray(from, to);
    names.push(new TextDecoder().decode(field).trim());
  }
  checkHeaderNames(names);
  return true;
}

import type { Scalar } from "../../odata/mod.ts";
import type { GroupedColumn } from "../query/grouped_columns.ts";
import { MAX_NUMBER_BYTES, writeNumber } from "./_write_number.ts";

// A page of aggregated groups written as JSON straight into bytes, from the
// groups' columns: no row object, no string per value, no text to encode
// again as it leaves. Numbers are written as String writes them (see
// _write_number.ts); the text of a dictionary's value is encoded once and
// kept with the dictionary.

/** A property of the page's rows: its name, the column of its values, and whether they are dates. */
export interface GroupedJsonProperty {
  readonly name: string;
  readonly column: GroupedColumn;
  /** Whether a number is a time (milliseconds), written as its ISO text. */
  readonly datetime: boolean;
}

/** What {@linkcode renderGroupedJson} writes. */
export interface GroupedJsonPage {
  /** The `@odata.context` URL. */
  readonly context: string;
  readonly properties: readonly GroupedJsonProperty[];
  /** The groups of the page, in order. */
  readonly groups: ArrayLike<number>;
  /** The `@odata.nextLink` URL, if there is one. */
  readonly nextLink?: string;
}

const utf8 = new TextEncoder();
const NULL = utf8.encode("null");
const ROW_OPEN = utf8.encode(`{"@odata.id":null`);

/** JSON bytes of a dictionary's values, by code, as met: by the values array (the store's, kept). */
const encodedByValues = new WeakMap<readonly Scalar[], (Uint8Array | undefined)[]>();
/** The same for values that are times, written as ISO text. */
const encodedTimesByValues = new WeakMap<readonly Scalar[], (Uint8Array | undefined)[]>();

/** Where pages are written before they are copied out whole; grows, and is used again by the next page. */
let scratch: Uint8Array = new Uint8Array(64 * 1024);

/** The largest scratch kept for the next page: one huge page does not pin its size for the process's life. */
const MAX_SCRATCH = 1 << 20;

/** How a property's values are written: numbers of the group, numbers or text of the group's code, or anything. */
const NUMBER = 0;
const CODED = 1;
const OTHER = 2;

const NO_CODES = new Int32Array(0);
const NO_NUMBERS = new Float64Array(0);

/** The numbers of a dictionary's values, by code (`NaN` for any other value): by the values array. */
const numbersByValues = new WeakMap<readonly Scalar[], Float64Array>();

/**
 * Writes a page of aggregated groups as JSON, as `JSON.stringify` writes
 * `{"@odata.context", value: [{"@odata.id": null, ...properties}],
 * "@odata.nextLink"}`, a property whose value is undefined left out.
 * The loop over a row's properties reads only typed arrays (a number of
 * the group, or of its code), so that it stays monomorphic whatever the
 * mix of columns; other values take a slower path.
 * @param page the context, the properties, the groups and the next link
 * @returns the page's bytes (UTF-8)
 * @throws {RangeError} for a time that is not a valid date (as `toISOString` does)
 */
export function renderGroupedJson(page: GroupedJsonPage): Uint8Array {
  const { properties, groups } = page;
  const count = properties.length;
  const kinds = new Uint8Array(count);
  const numbers: Float64Array[] = [];
  const codes: Int32Array[] = [];
  const encoded: (Uint8Array | undefined)[][] = [];
  const prefixes: Uint8Array[] = [];
  let rowBytes = 2 + ROW_OPEN.length;
  for (let p = 0; p < count; p++) {
    const { name, column, datetime } = properties[p]!;
    const prefix = encode(`,${JSON.stringify(name)}:`);
    prefixes.push(prefix);
    rowBytes += prefix.length + MAX_NUMBER_BYTES;
    if (column.kind === "numbers" && !datetime) {
      kinds[p] = NUMBER;
      numbers.push(column.values);
      codes.push(NO_CODES);
      encoded.push([]);
    } else if (column.kind === "codes") {
      kinds[p] = CODED;
      numbers.push(
        datetime ? new Float64Array(column.values.length).fill(NaN) : numbersOf(column.values),
      );
      codes.push(column.codes);
      encoded.push(encodedOf(column.values, datetime));
    } else {
      kinds[p] = OTHER;
      numbers.push(NO_NUMBERS);
      codes.push(NO_CODES);
      encoded.push([]);
    }
  }
  const head = encode(`{"@odata.context":${JSON.stringify(page.context)},"value":[`);
  let buf = ensure(scratch, 0, head.length);
  buf.set(head);
  let at = head.length;
  for (let r = 0; r < groups.length; r++) {
    const g = groups[r]!;
    buf = ensure(buf, at, rowBytes);
    if (r > 0) buf[at++] = 0x2c;
    for (let i = 0; i < ROW_OPEN.length; i++) buf[at++] = ROW_OPEN[i]!;
    for (let p = 0; p < count; p++) {
      const kind = kinds[p]!;
      const prefix = prefixes[p]!;
      if (kind === OTHER) {
        const text = otherJson(properties[p]!, g);
        if (text === undefined) continue; // JSON.stringify leaves undefined out
        buf = ensure(buf, at, prefix.length + text.length + rowBytes);
        for (let i = 0; i < prefix.length; i++) buf[at++] = prefix[i]!;
        buf.set(text, at);
        at += text.length;
        continue;
      }
      for (let i = 0; i < prefix.length; i++) buf[at++] = prefix[i]!;
      const code = kind === CODED ? codes[p]![g]! : g;
      const v = numbers[p]![code]!;
      if (v - v === 0) at = writeNumber(buf, at, v);
      else if (kind === NUMBER) { for (let i = 0; i < 4; i++) buf[at++] = NULL[i]!; }
      else {
        const column = properties[p]!.column as { readonly values: readonly Scalar[] };
        const text = encoded[p]![code] ??= utf8.encode(
          jsonOf(column.values[code]!, properties[p]!.datetime),
        );
        buf = ensure(buf, at, text.length + rowBytes);
        if (text.length <= 16) { for (let i = 0; i < text.length; i++) buf[at++] = text[i]!; }
        else {
          buf.set(text, at);
          at += text.length;
        }
      }
    }
    buf[at++] = 0x7d;
  }
  const tail = encode(
    page.nextLink === undefined ? "]}" : `],"@odata.nextLink":${JSON.stringify(page.nextLink)}}`,
  );
  buf = ensure(buf, at, tail.length);
  buf.set(tail, at);
  at += tail.length;
  if (buf.length <= MAX_SCRATCH) scratch = buf;
  return buf.slice(0, at);
}

/** A value of a column of any values (or of times) as JSON bytes; undefined for undefined. */
function otherJson(property: GroupedJsonProperty, g: number): Uint8Array | undefined {
  const column = property.column;
  let v: Scalar | undefined;
  if (column.kind === "numbers") {
    v = column.values[g]! === column.values[g]! ? column.values[g]! : null;
  } else if (column.kind === "codes") v = column.values[column.codes[g]!];
  else v = column.values[g];
  return v === undefined ? undefined : utf8.encode(jsonOf(v, property.datetime));
}

/** UTF-8 of a text: an ASCII one (the usual) a byte a character, cheaper than TextEncoder for short texts. */
function encode(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0x80) return utf8.encode(text);
    bytes[i] = unit;
  }
  return bytes;
}

function numbersOf(values: readonly Scalar[]): Float64Array {
  let numbers = numbersByValues.get(values);
  if (numbers === undefined) {
    numbers = Float64Array.from(values, (v) => (typeof v === "number" ? v : NaN));
    numbersByValues.set(values, numbers);
  }
  return numbers;
}

/** A buffer with room for `bytes` more from `at`: the same one, or a bigger copy of its first `at` bytes. */
function ensure(buf: Uint8Array, at: number, bytes: number): Uint8Array {
  if (at + bytes <= buf.length) return buf;
  let size = buf.length * 2;
  while (size < at + bytes) size *= 2;
  const grown = new Uint8Array(size);
  grown.set(buf.subarray(0, at));
  return grown;
}

function encodedOf(values: readonly Scalar[], datetime: boolean): (Uint8Array | undefined)[] {
  const byValues = datetime ? encodedTimesByValues : encodedByValues;
  let encoded = byValues.get(values);
  if (encoded === undefined) {
    encoded = new Array<Uint8Array | undefined>(values.length);
    byValues.set(values, encoded);
  }
  return encoded;
}

/** A value as JSON, a time (a number, with `datetime`) as its ISO text. */
function jsonOf(value: Scalar, datetime: boolean): string {
  if (typeof value === "number") {
    if (datetime) return JSON.stringify(new Date(value).toISOString());
    return Number.isFinite(value) ? String(value) : "null";
  }
  return JSON.stringify(value);
}

// Rows written as JSON straight into bytes, for pages seen once (a client
// downloading a dataset in pages of 10,000 rows): the fields of a row are
// grouped into few fragments, each found in a table and copied whole.
//
// - Fields of the row's location or dataset (the same on all of a
//   location's rows) make one fragment per location (or dataset).
// - Neighbouring dictionary fields of the row itself make a group when the
//   values they usually take are few together (judged by the dictionaries'
//   row counts): the group's fragment is found by its codes, in a table
//   filled as combinations are met (bounded: it starts over when full).
// - Numbers and ids are written as digits (see _write_number.ts); the
//   name of a number field ends the fragment before it.
//
// A row then costs a handful of copies and its numbers rather than a copy
// a field. The tables belong to the writer (one per field selection, kept
// by the RowWriterCache), never to the store.

import { type CodeArray, type DictColumn, rowNumberReader } from "../../columnar/mod.ts";
import type { Scalar } from "../../odata/mod.ts";
import type { CollectionField, FieldLevel } from "../fields.ts";
import type { WaterStore } from "../store/store.ts";
import { FragmentTable } from "./_fragment_table.ts";
import { MAX_NUMBER_BYTES, writeInt, writeNumber } from "./_write_number.ts";

/** Rows written as comma-separated JSON objects, with where each starts and ends. */
export interface JsonRowBlock {
  readonly block: Uint8Array;
  /** Where row `k`'s object starts in `block`. */
  readonly starts: Uint32Array;
  /** Where row `k`'s object ends (exclusive). */
  readonly ends: Uint32Array;
}

/**
 * Writes rows of one collection with one field selection, comma-separated,
 * between `head` and `tail` when given (a page's opening and closing bytes,
 * so that the page is one block). With `scratch`, the rows are written into
 * it when they are expected to fit (the block is then a view of it);
 * otherwise, or once they outgrow it, into a new buffer.
 */
export type JsonRowBytes = (
  rows: ArrayLike<number>,
  head?: Uint8Array,
  tail?: Uint8Array,
  scratch?: Uint8Array,
) => JsonRowBlock;

/** Options of {@linkcode createJsonRowBytes}: how fields are grouped and how much a table keeps. */
export interface JsonRowBytesOptions {
  /**
   * Neighbouring dictionary fields join a group while the product of their
   * effective sizes (the number of equally common values that would spread
   * the rows as evenly) stays within this.
   * @default {4096}
   */
  readonly groupSpread?: number;
  /**
   * A group with at most this many code combinations finds its fragments
   * by key in an array; one with more, in a hash table.
   * @default {4096}
   */
  readonly denseKeys?: number;
  /**
   * Fragments a group's hash table holds before it starts over.
   * @default {8192}
   */
  readonly maxTableEntries?: number;
}

/** Codes of a group combine into one non-negative 31-bit key. */
const MAX_GROUP_KEYS = 0x7fffffff;
/** Fragments up to this length are copied byte by byte, longer ones with `set` (a call costs some 20 bytes). */
const SHORT = 16;
const INT32 = 0x80000000;

const utf8 = new TextEncoder();
const EMPTY = new Uint8Array(0);
const NO_VALUES = new Float64Array(0);

const ID = 0;
const OUTER = 1;
const GROUP = 2;
const NUMBER = 3;

/**
 * One step of writing a row. Every step has every field (those of other
 * kinds empty), so that the row loop reads objects of one shape.
 */
interface Step {
  readonly kind: typeof ID | typeof OUTER | typeof GROUP | typeof NUMBER;
  /** ID, NUMBER: the field's name, or nothing when the fragment before ends with it. */
  name: Uint8Array;
  /** NUMBER: what a null writes (`null`, after the name when the step writes it). */
  empty: Uint8Array;
  /** NUMBER: the column's values. */
  readonly values: Float64Array;
  /** ID: a row's id. */
  readonly read: (row: number) => number;
  /** OUTER: keyed by location when true, else by dataset. */
  byLocation: boolean;
  /** OUTER: fragments by location or dataset; GROUP: by key, when there are few keys. */
  readonly fragments: (Uint8Array | undefined)[];
  /** OUTER: each field's text, its name first. */
  readonly texts: ((location: number, dataset: number) => string)[];
  /** GROUP: the fields' codes, dictionary sizes and bytes. */
  readonly codes: readonly CodeArray[];
  readonly sizes: readonly number[];
  readonly parts: readonly FieldBytes[];
  /** GROUP: fragments by key, when there are many keys. */
  readonly table: FragmentTable | null;
  readonly pool: Pool | null;
  /** OUTER, GROUP: what ends each fragment: the next number's name, the row's closing brace. */
  suffix: string;
  suffixBytes: Uint8Array;
}

function newStep(kind: Step["kind"], fields: Partial<Step>): Step {
  return {
    kind,
    name: fields.name ?? EMPTY,
    empty: fields.empty ?? EMPTY,
    values: fields.values ?? NO_VALUES,
    read: fields.read ?? noRead,
    byLocation: fields.byLocation ?? false,
    fragments: [],
    texts: fields.texts ?? [],
    codes: fields.codes ?? [],
    sizes: fields.sizes ?? [],
    parts: fields.parts ?? [],
    table: fields.table ?? null,
    pool: fields.pool ?? null,
    suffix: "",
    suffixBytes: EMPTY,
  };
}

function noRead(): number {
  return 0;
}

/**
 * Builds the byte writer of a field selection. Its output is, byte for
 * byte, `JSON.stringify` of each row as an object of the selected fields.
 * @param store the store
 * @param level the level of the collection's rows
 * @param fields the selected fields
 * @param options grouping and table limits
 * @returns the writer
 * @throws {TypeError} when a field has no column in the store
 */
export function createJsonRowBytes(
  store: WaterStore,
  level: FieldLevel,
  fields: readonly CollectionField[],
  options: JsonRowBytesOptions = {},
): JsonRowBytes {
  const steps = planSteps(store, level, fields, {
    groupSpread: options.groupSpread ?? 4096,
    denseKeys: options.denseKeys ?? 4096,
    maxTableEntries: options.maxTableEntries ?? 8192,
  });
  // No field: each row is {}.
  if (steps.length === 0) steps.push(newStep(OUTER, { texts: [() => "{"] }));
  /** The closing brace ends the last fragment, or is written alone. */
  const last = steps[steps.length - 1]!;
  const closed = last.kind === OUTER || last.kind === GROUP;
  if (closed) last.suffix += "}";
  for (const step of steps) step.suffixBytes = utf8.encode(step.suffix);
  const starts = store.locationRowStarts;
  /** Bytes a row took last time, a little over: the next block is sized once, not grown. */
  let rowBytes = 256;
  return (rows, head = EMPTY, tail = EMPTY, scratch) => {
    const n = rows.length;
    const expected = Math.max(1024, n * rowBytes + head.length + tail.length);
    let buf = scratch !== undefined && scratch.length >= expected
      ? scratch
      : new Uint8Array(expected);
    let cap = buf.length;
    const rowStarts = new Uint32Array(n);
    const rowEnds = new Uint32Array(n);
    buf.set(head);
    let at = head.length;
    let location = -1;
    let dataset = -1;
    /** The rows of `location`: `first .. end - 1`. */
    let first = 0;
    let end = 0;
    for (let i = 0; i < n; i++) {
      const row = rows[i]!;
      if (level === "observation") {
        if (row < first || row >= end) {
          location = store.locationOfRow(row);
          dataset = store.datasetOfLocation(location);
          first = starts[location]!;
          end = starts[location + 1]!;
        }
      } else if (level === "location") {
        if (row !== location) {
          location = row;
          dataset = store.datasetOfLocation(row);
        }
      } else {
        dataset = row;
      }
      if (at + 2 > cap) cap = (buf = grow(buf, at, 2)).length;
      if (i > 0) buf[at++] = 0x2c;
      rowStarts[i] = at;
      for (let s = 0; s < steps.length; s++) {
        const step = steps[s]!;
        let fragment: Uint8Array;
        switch (step.kind) {
          case ID: {
            const name = step.name;
            if (at + name.length + MAX_NUMBER_BYTES > cap) {
              cap = (buf = grow(buf, at, name.length + MAX_NUMBER_BYTES)).length;
            }
            for (let j = 0; j < name.length; j++) buf[at + j] = name[j]!;
            at += name.length;
            const id = step.read(row);
            at = id >= 0 && id < INT32 ? writeInt(buf, at, id | 0) : writeNumber(buf, at, id);
            continue;
          }
          case NUMBER: {
            const name = step.name;
            const v = step.values[row]!;
            if (at + name.length + MAX_NUMBER_BYTES > cap) {
              cap = (buf = grow(buf, at, name.length + MAX_NUMBER_BYTES)).length;
            }
            if (v - v !== 0) {
              // NaN (null) and, as JSON.stringify has them, infinities.
              const empty = step.empty;
              for (let j = 0; j < empty.length; j++) buf[at + j] = empty[j]!;
              at += empty.length;
              continue;
            }
            for (let j = 0; j < name.length; j++) buf[at + j] = name[j]!;
            at += name.length;
            if ((v | 0) === v && v !== -INT32) {
              // A whole number without handing a double over; -0 is written 0, as String does.
              if (v < 0) buf[at++] = 0x2d;
              at = writeInt(buf, at, v < 0 ? -v | 0 : v | 0);
            } else {
              at = writeNumber(buf, at, v);
            }
            continue;
          }
          case OUTER: {
            const key = step.byLocation ? location : dataset;
            fragment = step.fragments[key] ?? outerFragment(step, key, location, dataset);
            break;
          }
          case GROUP: {
            const codes = step.codes;
            const sizes = step.sizes;
            let key = codes[0]![row]!;
            for (let j = 1; j < codes.length; j++) key = key * sizes[j]! + codes[j]![row]!;
            const found = step.table === null ? step.fragments[key] : step.table.get(key);
            fragment = found ?? groupFragment(step, key, row);
            break;
          }
        }
        const length = fragment.length;
        if (at + length > cap) cap = (buf = grow(buf, at, length)).length;
        if (length <= SHORT) { for (let j = 0; j < length; j++) buf[at + j] = fragment[j]!; }
        else buf.set(fragment, at);
        at += length;
      }
      if (!closed) {
        if (at + 1 > cap) cap = (buf = grow(buf, at, 1)).length;
        buf[at++] = 0x7d;
      }
      rowEnds[i] = at;
    }
    if (n > 0) rowBytes = Math.ceil(((at - head.length) / n) * 1.1) + 8;
    if (at + tail.length > cap) cap = (buf = grow(buf, at, tail.length)).length;
    buf.set(tail, at);
    at += tail.length;
    // Trimmed when the guess was far too big: the render cache keeps the block as long as any of its rows.
    const block = at < cap * 0.8 && buf !== scratch ? buf.slice(0, at) : buf.subarray(0, at);
    return { block, starts: rowStarts, ends: rowEnds };
  };
}

function grow(buf: Uint8Array, at: number, needed: number): Uint8Array<ArrayBuffer> {
  const bigger = new Uint8Array(Math.max(buf.length * 2, at + needed + 1024));
  bigger.set(buf.subarray(0, at));
  return bigger;
}

/** A field's name as it starts its part of a row: `{"Name":` first, `,"Name":` after. */
function nameOf(field: CollectionField, index: number): string {
  return `${index === 0 ? "{" : ","}${JSON.stringify(field.name)}:`;
}

interface Limits {
  readonly groupSpread: number;
  readonly denseKeys: number;
  readonly maxTableEntries: number;
}

interface DictField {
  readonly column: DictColumn;
  readonly name: string;
}

/** The fields of a selection as steps: runs of outer fields, groups of dictionary fields, numbers, ids. */
function planSteps(
  store: WaterStore,
  level: FieldLevel,
  fields: readonly CollectionField[],
  limits: Limits,
): Step[] {
  const steps: Step[] = [];
  /** Dictionary fields of the row not yet grouped. */
  let run: DictField[] = [];
  const endRun = (): void => {
    for (const group of groupFields(run, limits.groupSpread)) steps.push(groupStep(group, limits));
    run = [];
  };
  fields.forEach((field, index) => {
    const name = nameOf(field, index);
    const source = field.source;
    // Dataset fields are metadata, not columns: outer at every level.
    if (source.level !== level || source.level === "dataset") {
      endRun();
      const text = outerText(store, field, name);
      const previous = steps[steps.length - 1];
      const byLocation = source.level === "location";
      if (previous !== undefined && previous.kind === OUTER) {
        previous.texts.push(text);
        previous.byLocation ||= byLocation;
      } else {
        steps.push(newStep(OUTER, { byLocation, texts: [text] }));
      }
      return;
    }
    const column = store.column(source.key);
    if (column === undefined) {
      throw new TypeError(`Cannot write field "${field.name}": no column ${source.key}`);
    }
    let step: Step;
    switch (column.kind) {
      case "dict":
        run.push({ column, name });
        return;
      case "number":
        endRun();
        step = newStep(NUMBER, {
          values: column.values,
          name: utf8.encode(name),
          empty: utf8.encode(`${name}null`),
        });
        break;
      case "rownumber":
        endRun();
        step = newStep(ID, { read: rowNumberReader(column), name: utf8.encode(name) });
        break;
      default:
        throw new TypeError(`Cannot write a ${column.kind} column`);
    }
    // The name of a number or id ends the fragment before it, when there is one.
    const previous = steps[steps.length - 1];
    if (previous !== undefined && (previous.kind === OUTER || previous.kind === GROUP)) {
      previous.suffix += name;
      step.name = EMPTY;
      step.empty = utf8.encode("null");
    }
    steps.push(step);
  });
  endRun();
  return steps;
}

/** The JSON text of an outer field, its name first, for a location and dataset. */
function outerText(
  store: WaterStore,
  field: CollectionField,
  name: string,
): (location: number, dataset: number) => string {
  const source = field.source;
  if (source.level === "dataset") {
    const key = source.key.slice("dataset.".length);
    const texts = store.datasets.map((d) =>
      name + JSON.stringify(key === "Id" ? d.id : d.metadata[key] ?? null)
    );
    return (_location, dataset) => texts[dataset]!;
  }
  const column = store.column(source.key);
  if (column === undefined) {
    throw new TypeError(`Cannot write field "${field.name}": no column ${source.key}`);
  }
  switch (column.kind) {
    case "dict": {
      const { codes, values } = column;
      return (location) => name + JSON.stringify(values[codes[location]!]!);
    }
    case "number": {
      const values = column.values;
      return (location) => name + JSON.stringify(values[location]!);
    }
    case "rownumber": {
      const read = rowNumberReader(column);
      return (location) => name + JSON.stringify(read(location));
    }
    default:
      throw new TypeError(`Cannot write a ${column.kind} column`);
  }
}

function outerFragment(step: Step, key: number, location: number, dataset: number): Uint8Array {
  let text = "";
  for (const part of step.texts) text += part(location, dataset);
  const fragment = utf8.encode(text + step.suffix);
  step.fragments[key] = fragment;
  return fragment;
}

/**
 * Splits a run of dictionary fields into groups: a field joins the group
 * before it while the product of the group's effective sizes stays within
 * `spread` and its code combinations fit a key.
 */
function groupFields(run: readonly DictField[], spread: number): DictField[][] {
  const groups: DictField[][] = [];
  let group: DictField[] = [];
  let effective = 1;
  let keys = 1;
  for (const field of run) {
    const size = field.column.values.length;
    const fieldEffective = effectiveSize(field.column);
    if (group.length > 0 && (effective * fieldEffective > spread || keys * size > MAX_GROUP_KEYS)) {
      groups.push(group);
      group = [];
      effective = 1;
      keys = 1;
    }
    group.push(field);
    effective *= fieldEffective;
    keys *= size;
  }
  if (group.length > 0) groups.push(group);
  return groups;
}

/**
 * How many values a column takes in effect: e to the entropy of its codes
 * over the rows (a column null on most rows counts little), or its
 * dictionary's size when the rows per code are not known.
 */
function effectiveSize(column: DictColumn): number {
  const counts = column.counts;
  if (counts === undefined) return column.values.length;
  let total = 0;
  for (let c = 0; c < counts.length; c++) total += counts[c]!;
  if (total === 0) return 1;
  let entropy = 0;
  for (let c = 0; c < counts.length; c++) {
    const p = counts[c]! / total;
    if (p > 0) entropy -= p * Math.log(p);
  }
  return Math.exp(entropy);
}

function groupStep(group: readonly DictField[], limits: Limits): Step {
  const sizes = group.map((f) => f.column.values.length);
  const keys = sizes.reduce((a, b) => a * b, 1);
  return newStep(GROUP, {
    codes: group.map((f) => f.column.codes),
    sizes,
    parts: group.map((f) => fieldBytes(f.column.values, f.name)),
    table: keys <= limits.denseKeys ? null : new FragmentTable(limits.maxTableEntries),
    pool: new Pool(),
  });
}

/** Makes and keeps the fragment of a group's key from the fields' bytes. */
function groupFragment(step: Step, key: number, row: number): Uint8Array {
  const codes = step.codes;
  const parts = step.parts;
  const suffix = step.suffixBytes;
  let length = suffix.length;
  const pieces: Uint8Array[] = new Array(codes.length);
  for (let j = 0; j < codes.length; j++) {
    const piece = parts[j]!.of(codes[j]![row]!);
    pieces[j] = piece;
    length += piece.length;
  }
  const fragment = step.pool!.take(length);
  let at = 0;
  for (const piece of pieces) {
    fragment.set(piece, at);
    at += piece.length;
  }
  fragment.set(suffix, at);
  if (step.table === null) step.fragments[key] = fragment;
  else step.table.set(key, fragment);
  return fragment;
}

/** A dictionary field's bytes, its name first, made per code when first asked. */
class FieldBytes {
  readonly #values: readonly Scalar[];
  readonly #name: string;
  readonly #bytes: (Uint8Array | undefined)[] = [];

  constructor(values: readonly Scalar[], name: string) {
    this.#values = values;
    this.#name = name;
  }

  of(code: number): Uint8Array {
    return this.#bytes[code] ??= utf8.encode(this.#name + JSON.stringify(this.#values[code]!));
  }
}

/** Per dictionary and name, shared by the writers of the selections that show the field alike. */
const fieldBytesCache = new WeakMap<readonly Scalar[], Map<string, FieldBytes>>();

function fieldBytes(values: readonly Scalar[], name: string): FieldBytes {
  let byName = fieldBytesCache.get(values);
  if (byName === undefined) fieldBytesCache.set(values, byName = new Map());
  let bytes = byName.get(name);
  if (bytes === undefined) byName.set(name, bytes = new FieldBytes(values, name));
  return bytes;
}

/** Hands out fragments as views of larger blocks, so that each is not an allocation of its own. */
class Pool {
  #block = new Uint8Array(0);
  #at = 0;

  take(length: number): Uint8Array {
    if (this.#at + length > this.#block.length) {
      this.#block = new Uint8Array(Math.max(1 << 16, length));
      this.#at = 0;
    }
    const view = this.#block.subarray(this.#at, this.#at + length);
    this.#at += length;
    return view;
  }
}

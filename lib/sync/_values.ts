import type { EntitySchema, FieldSchema } from "./schema.ts";
import type { FieldValue, SyncObject } from "./types.ts";
import { isUuid } from "./_uuid.ts";

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?Z$/;

/**
 * Tells whether a text is an ISO 8601 UTC date-time (`yyyy-mm-ddThh:mm:ss[.f]Z`) of a real day.
 * @param text the text
 * @returns whether it is one
 */
export function isUtcDateTime(text: string): boolean {
  const match = DATETIME.exec(text);
  if (match === null) return false;
  const part = (group: number): number => Number(match[group]);
  const [year, month, day] = [part(1), part(2), part(3)];
  if (!(month >= 1 && month <= 12 && day >= 1)) return false;
  if (!(part(4) <= 23 && part(5) <= 59 && part(6) <= 59)) return false;
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
  const days = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
  return day <= days;
}

/** The number of code points of a string (a surrogate pair counts once). */
export function codePointLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        length--;
        i++;
      }
    }
  }
  return length;
}

/** A value read for a field, or what is wrong with it. */
export type FieldRead = { readonly value: FieldValue } | { readonly error: string };

/**
 * Checks one JSON value against a field's schema.
 * @param field the field
 * @param value the value as sent
 * @returns the value to keep (UUIDs lower-cased), or a message saying what is wrong
 */
export function readField(field: FieldSchema, value: unknown): FieldRead {
  if (value === null) {
    return field.nullable ? { value: null } : { error: "Expected a value, got null" };
  }
  switch (field.type) {
    case "boolean":
      return typeof value === "boolean"
        ? { value }
        : { error: `Expected a boolean, got ${describe(value)}` };
    case "uuid":
      return isUuid(value)
        ? { value: value.toLowerCase() }
        : { error: `Expected a UUID, got ${describe(value)}` };
    case "datetime":
      return typeof value === "string" && isUtcDateTime(value)
        ? { value }
        : { error: `Expected an ISO 8601 UTC date-time, got ${describe(value)}` };
    case "string":
      return readString(field, value);
  }
}

function readString(field: FieldSchema, value: unknown): FieldRead {
  if (typeof value !== "string") return { error: `Expected a string, got ${describe(value)}` };
  if (field.values !== undefined && !field.values.includes(value)) {
    const values = field.values.map((v) => JSON.stringify(v)).join(", ");
    return { error: `Expected one of ${values}, got ${describe(value)}` };
  }
  const min = field.minLength ?? 0;
  const max = field.maxLength ?? Infinity;
  // Code points never outnumber UTF-16 units, so a text twice too long is rejected unread.
  const length = value.length > 2 * max ? value.length : codePointLength(value);
  if (length < min || length > max) {
    return { error: `Expected a string of ${min} to ${max} characters, got ${length}` };
  }
  if (field.pattern !== undefined && !field.pattern.test(value)) {
    return { error: `Expected a string matching ${String(field.pattern)}, got ${describe(value)}` };
  }
  return { value };
}

/**
 * Describes a value for a message, never quoting the whole of a long string.
 * @param value any value
 * @returns e.g. `"abc"`, `an object`, `42`, `nothing`
 */
export function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  if (typeof value === "string") {
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  }
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object" && value !== null) return "an object";
  return String(value);
}

/** An object completed from a patch: absent fields filled, and the required ones still missing. */
export interface CompletedObject {
  readonly object: SyncObject;
  readonly missing: readonly string[];
}

/**
 * Completes an object of a patch: an absent read-only field keeps the
 * current value, another absent field takes its default; fields come in
 * schema order.
 * @param entity the object's entity
 * @param object the object as sent
 * @param current the stored object with the same key, if any
 * @returns the frozen object and the names of required fields it still lacks
 */
export function completeObject(
  entity: EntitySchema,
  object: SyncObject,
  current: SyncObject | undefined,
): CompletedObject {
  const out: { [field: string]: FieldValue } = {};
  const missing: string[] = [];
  for (const field of entity.fields) {
    let value = Object.hasOwn(object, field.name) ? object[field.name] : undefined;
    const keep = field.readOnly && current !== undefined && Object.hasOwn(current, field.name);
    if (value === undefined && keep) value = current[field.name];
    if (value === undefined) value = field.default;
    if (value !== undefined) out[field.name] = value;
    else if (field.required) missing.push(field.name);
  }
  return { object: Object.freeze(out), missing };
}

/**
 * Tells whether two objects have the same fields with the same values.
 * @param a one object
 * @param b another
 * @returns whether they are equal
 */
export function sameObject(a: SyncObject, b: SyncObject): boolean {
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || a[key] !== b[key]) return false;
  }
  return true;
}

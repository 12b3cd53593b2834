import { isCalendarDate } from "../../odata/_internal.ts";
import type { ValueCheck } from "./_byte_dictionary.ts";

const TIME = /^(?:[01]?[0-9]|2[0-3]):[0-5]?[0-9](?::[0-5]?[0-9](?:\.[0-9]{1,3})?)?$/;
const TIME_ZONE = /^(?:Z|[+-](?:0[0-9]|1[0-9]|2[0-4]):[0-5][0-9])$/;

const CHECKS: Readonly<Record<string, ValueCheck>> = {
  date: (
    text,
  ) => (isCalendarDate(text) ? undefined : `found "${text}", which is not a YYYY-MM-DD date`),
  time: (
    text,
  ) => (TIME.test(text) ? undefined : `found "${text}", which is not a HH:MM[:SS[.sss]] time`),
  zone: (
    text,
  ) => (TIME_ZONE.test(text)
    ? undefined
    : `found "${text}", which is not a time zone like -04:00 or Z`),
};

/**
 * The check a text column's values pass as a data file is read, by the
 * column's name: a date (`…Date`), a time zone (`…TimeZone`) or a time
 * (`…Time`); none for other columns.
 * @param name the column's name
 * @returns the check, or none
 */
export function valueCheckFor(name: string): ValueCheck | undefined {
  if (name.endsWith("Date")) return CHECKS["date"];
  if (name.endsWith("TimeZone")) return CHECKS["zone"];
  if (name.endsWith("Time")) return CHECKS["time"];
  return undefined;
}

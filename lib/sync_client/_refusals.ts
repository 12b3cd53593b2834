// Which objects of a refused patch the server refused, and why: from an
// aborted ticket's errors, or from a 422's `[{message, field}]`. Pure.
import type { Intent } from "./_state.ts";
import { isRecord, OBJECT_KEY } from "./_wire.ts";
import type { SyncEntityName, SyncObjectError } from "./types.ts";

/** The objects refused, by `OBJECT_KEY`, with their errors. */
export type Refusals = Map<string, SyncObjectError[]>;

/**
 * The objects an aborted ticket's errors refuse. Conflicts refuse nothing
 * (the pull after rebases them); an error on `base_revision` asks for a
 * snapshot. When no error can be told apart, every object is refused, so
 * that a patch is never sent forever.
 * @param errors the ticket's errors
 * @param carried the patch's intents
 * @returns the refused objects; whether to rebase on a snapshot
 */
export function abortedRefusals(
  errors: readonly SyncObjectError[],
  carried: readonly Intent[],
): { refused: Refusals; snapshot: boolean } {
  const refused: Refusals = new Map();
  let understood = false;
  let snapshot = false;
  const me = carried.find((intent) => intent.entity === "me")?.uuid;
  for (const error of errors) {
    if (error.attribute === "base_revision") {
      // A base past the retention (or never issued): rebase on a snapshot.
      snapshot = true;
      understood = true;
      continue;
    }
    if (error.messages.length > 0 && error.messages.every((m) => m.code === "conflict")) {
      understood = true;
      continue;
    }
    const uuid = error.key?.uuid ?? (error.entity === "me" ? me : undefined);
    if (uuid === undefined) continue;
    const key = OBJECT_KEY(error.entity, uuid.toLowerCase());
    refused.set(key, [...(refused.get(key) ?? []), error]);
  }
  if (!understood && refused.size === 0) {
    for (const intent of carried) refused.set(OBJECT_KEY(intent.entity, intent.uuid), [...errors]);
  }
  return { refused, snapshot };
}

const FIELD = /^(objects|deleted_objects)\.(messages|teams|me)(?:\[(\d+)\])?(?![A-Za-z_])/;

/** The uuid of the object a 422 field path names in a patch body. */
function uuidAt(body: unknown, match: RegExpExecArray): string | undefined {
  if (!isRecord(body)) return undefined;
  const section = body[match[1]!];
  const member = isRecord(section) ? section[match[2]!] : undefined;
  const item = match[3] === undefined
    ? member
    : Array.isArray(member)
    ? member[Number(match[3])]
    : undefined;
  if (typeof item === "string") return item;
  return isRecord(item) && typeof item["uuid"] === "string" ? item["uuid"] : undefined;
}

/**
 * The objects a 422 refuses: each one its `field` names (e.g.
 * `objects.messages[2].subject`); every object of the patch for an error
 * that names none.
 * @param errors the 422's `[{message, field}]`
 * @param body the patch's body, as sent
 * @param carried the patch's intents
 * @returns the refused objects
 */
export function invalidRefusals(
  errors: readonly { readonly message: string; readonly field?: string }[],
  body: string,
  carried: readonly Intent[],
): Refusals {
  const parsed: unknown = JSON.parse(body);
  const refused: Refusals = new Map();
  const add = (key: string, error: SyncObjectError): void =>
    void refused.set(key, [...(refused.get(key) ?? []), error]);
  for (const error of errors) {
    const match = FIELD.exec(error.field ?? "");
    const uuid = match === null ? undefined : uuidAt(parsed, match);
    const entity: SyncEntityName = match?.[2] === "messages" || match?.[2] === "teams"
      ? match[2]
      : "me";
    const objectError: SyncObjectError = {
      section: match?.[1] === "deleted_objects" ? "deleted_objects" : "objects",
      entity,
      key: uuid === undefined ? null : { uuid },
      attribute: null,
      messages: [{ level: "dev_error", code: "input_format", message: error.message }],
    };
    if (uuid === undefined) {
      for (const intent of carried) add(OBJECT_KEY(intent.entity, intent.uuid), objectError);
    } else add(OBJECT_KEY(entity, uuid.toLowerCase()), objectError);
  }
  if (refused.size === 0) {
    for (const intent of carried) refused.set(OBJECT_KEY(intent.entity, intent.uuid), []);
  }
  return refused;
}

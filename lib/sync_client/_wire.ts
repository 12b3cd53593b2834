// What the client reads of the server's answers, and checks of what it is given.
import { SyncClientError } from "./errors.ts";
import { DEFAULTS, type JsonObject, type ServerData } from "./_state.ts";
import type { SyncEntityName, SyncObjectError } from "./types.ts";

/** A ticket as the API shows it (the fields the client reads). */
export interface TicketBody {
  readonly uuid: string;
  readonly status: string;
  readonly errors?: readonly SyncObjectError[] | null;
}

export const OBJECT_KEY = (entity: SyncEntityName, uuid: string): string => `${entity} ${uuid}`;

export function unexpected(what: string, response: Response): SyncClientError {
  return new SyncClientError(
    "ERR_SYNC_CLIENT_RESPONSE",
    `Cannot ${what}: the server answered ${response.status}`,
    { status: response.status },
  );
}

export function isRecord(value: unknown): value is { readonly [key: string]: unknown } {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The object a local write keeps: the server's defaults, the given fields, the uuid lower-cased. */
export function completeObject(entity: SyncEntityName, object: unknown): JsonObject {
  if (!isRecord(object) || typeof object["uuid"] !== "string" || object["uuid"] === "") {
    throw new TypeError(`Cannot write ${entity}: the object must have its uuid`);
  }
  const complete: Record<string, string | boolean | null> = { ...DEFAULTS[entity] };
  for (const [field, value] of Object.entries(object)) {
    if (value !== null && typeof value !== "string" && typeof value !== "boolean") {
      throw new TypeError(
        `Cannot write ${entity}: field ${field} must be a string, a boolean or null`,
      );
    }
    complete[field] = value;
  }
  complete["uuid"] = object["uuid"].toLowerCase();
  return Object.freeze(complete);
}

export function ticketOf(raw: { readonly [key: string]: unknown }): TicketBody {
  return {
    uuid: String(raw["uuid"]),
    status: String(raw["status"]),
    errors: Array.isArray(raw["errors"]) ? raw["errors"] as SyncObjectError[] : [],
  };
}

export function dataOf(raw: { readonly [key: string]: unknown }, response: Response): ServerData {
  if (
    typeof raw["revision"] !== "string" || typeof raw["serial"] !== "number" ||
    !isRecord(raw["objects"])
  ) {
    throw new SyncClientError(
      "ERR_SYNC_CLIENT_RESPONSE",
      "Cannot read the server's data: it lacks revision, serial or objects",
      { status: response.status },
    );
  }
  // The members are the API's (lib/sync/types.ts SyncData, SyncDiff).
  return raw as unknown as ServerData;
}

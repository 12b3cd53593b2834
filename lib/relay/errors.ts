/** Codes of {@linkcode RelayError}. */
export type RelayErrorCode =
  | "ERR_RELAY_INVALID_WEBHOOK"
  | "ERR_RELAY_INVALID_TENANTS"
  | "ERR_RELAY_INVALID_ENDPOINT"
  | "ERR_RELAY_INVALID_SCHEDULE"
  | "ERR_RELAY_INVALID_CIDR"
  | "ERR_RELAY_UNKNOWN_ENDPOINT"
  | "ERR_RELAY_UNKNOWN_MESSAGE"
  | "ERR_RELAY_ENDPOINT_EXISTS"
  | "ERR_RELAY_IDEMPOTENCY_CONFLICT"
  | "ERR_RELAY_QUEUE_FULL"
  | "ERR_RELAY_QUEUE_UNAVAILABLE"
  | "ERR_RELAY_BLOCKED_ADDRESS";

/** One problem of a request body, at a field. */
export interface RelayFieldError {
  readonly message: string;
  /** Where the problem is, e.g. `endpoints[0].url`; absent for the body as a whole. */
  readonly field?: string;
}

/** Options of {@linkcode RelayError}. */
export interface RelayErrorOptions extends ErrorOptions {
  /** The field the error is about, reported as the error's `target`. */
  target?: string;
  /** How long to wait before trying again (a full or unreachable queue). */
  retryAfterMs?: number;
}

/**
 * An error of the relay domain: an invalid webhook, tenants file, endpoint,
 * retry schedule or address range; an unknown endpoint or message; a full or
 * unavailable queue; a delivery refused by the address policy.
 */
export class RelayError extends Error {
  readonly code: RelayErrorCode;
  readonly target: string | undefined;
  /** How long to wait before trying again (lib/http sends it as `Retry-After`). */
  readonly retryAfterMs: number | undefined;

  /**
   * Creates a relay error.
   * @param code stable error code
   * @param message human-readable message
   * @param options the target field, the wait and the cause
   */
  constructor(code: RelayErrorCode, message: string, options: RelayErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RelayError";
    this.code = code;
    this.target = options.target;
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * The error of a queue at its capacity (answered 503 with `Retry-After: 1`).
 * @param what what could not be queued, e.g. "queue the message"
 * @param capacity the queue's limit of jobs
 * @returns the error to throw or reject with
 */
export function queueFull(what: string, capacity: number): RelayError {
  return new RelayError(
    "ERR_RELAY_QUEUE_FULL",
    `Cannot ${what}: the queue holds its limit of ${capacity} jobs`,
    {
      retryAfterMs: 1000,
    },
  );
}

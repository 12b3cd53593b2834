import { defaultSleep } from "./_platform.ts";
import type { ChangesTransport } from "./types.ts";

/** Options of {@linkcode pollChanges}. */
export interface PollChangesOptions {
  /**
   * How long between two pulls, in milliseconds.
   * @default {30000}
   */
  readonly interval?: number;
  /**
   * Waits; resolves early when the signal aborts.
   * @default a timer
   */
  readonly sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * The changes transport that polls: every `interval` it says "maybe
 * something changed", and the client pulls (a diff, usually a 204). A
 * server that announces its revisions (a stream) can take its place.
 * @param options the interval and the sleep
 * @returns the transport, for `createSyncClient`'s `watch`
 * @throws {RangeError} when `interval` is not a positive number
 * @example
 * ```ts
 * const client = createSyncClient({ baseUrl, clientId: "my-app", watch: pollChanges({ interval: 5000 }) });
 * client.start();
 * ```
 */
export function pollChanges(options: PollChangesOptions = {}): ChangesTransport {
  const interval = options.interval ?? 30_000;
  if (!(interval > 0)) {
    throw new RangeError(`Cannot poll: interval must be a positive number, got ${interval}`);
  }
  const sleep = options.sleep ?? defaultSleep;
  return async function* poll(_since, signal) {
    while (!signal.aborted) {
      await sleep(interval, signal);
      if (!signal.aborted) yield undefined;
    }
  };
}

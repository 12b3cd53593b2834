import type { RunningService } from "../http/mod.ts";

/**
 * The running services of an app, in the order they started: started one
 * after another (a failure stops what did start, so that a failed start
 * leaves nothing running); stopped by draining them all, then closing them
 * one after another in the reverse of that order, and what they share (the
 * backends) last.
 *
 * Draining is together, not in order: a drain ends the work in flight
 * (deliveries, queued sync jobs) while every service is still open, so a
 * draining service can still call one started before it (the sync API's
 * jobs call the token service), and the shutdown waits for the slowest
 * drain rather than the sum of them, within the one `closeTimeoutMs`. Closes
 * are in reverse: a service started after another may use it (the sync API
 * authorizes through the token service), so it closes first, as a stack
 * unwinds.
 */
export class Lifecycle {
  readonly #running: RunningService[] = [];
  readonly #afterAll: () => Promise<void>;

  /**
   * @param afterAll what closes once every service has (the backends)
   */
  constructor(afterAll: () => Promise<void>) {
    this.#afterAll = afterAll;
  }

  /** The services started so far, in order. */
  get running(): readonly RunningService[] {
    return this.#running;
  }

  /**
   * Starts services one step after another; when a step fails, stops every
   * service started (as {@linkcode Lifecycle.stop} does) and throws the step's error.
   * @param steps each starts some services
   */
  async start(steps: readonly (() => Promise<readonly RunningService[]>)[]): Promise<void> {
    try {
      for (const step of steps) this.#running.push(...(await step()));
    } catch (error) {
      await this.#stopAll();
      throw error;
    }
  }

  /**
   * Drains every service together (deliveries in flight, queued jobs), then
   * closes them one at a time, the last started first, then what they share.
   * A failed drain or close does not keep the rest open.
   * @throws {unknown} the first failure, once everything has been stopped
   */
  async stop(): Promise<void> {
    const failures = await this.#stopAll();
    if (failures.length > 0) throw failures[0];
  }

  /** Drains, closes in reverse and closes what is shared; returns what failed, in that order. */
  async #stopAll(): Promise<unknown[]> {
    const failures: unknown[] = [];
    for (const drained of await Promise.allSettled(this.#running.map((s) => s.drain()))) {
      if (drained.status === "rejected") failures.push(drained.reason);
    }
    for (const service of this.#running.toReversed()) {
      await service.close().catch((error: unknown) => void failures.push(error));
    }
    await this.#afterAll().catch((error: unknown) => void failures.push(error));
    return failures;
  }
}

import type { RunningService } from "../http/mod.ts";

/**
 * The running services of an app, in the order they started: started one
 * after another (a failure stops what did start, so that a failed start
 * leaves nothing running), then drained together and closed together, and
 * what they share (the backends) closed last.
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
   * service started and closes what they share, then throws its error.
   * @param steps each starts some services
   */
  async start(steps: readonly (() => Promise<readonly RunningService[]>)[]): Promise<void> {
    try {
      for (const step of steps) this.#running.push(...(await step()));
    } catch (error) {
      await Promise.allSettled(this.#running.map((service) => service.drain()));
      await Promise.allSettled(this.#running.map((service) => service.close()));
      await this.#afterAll().catch(() => {});
      throw error;
    }
  }

  /** Drains every service (deliveries in flight, queued jobs), closes them, then what they share. */
  async stop(): Promise<void> {
    await Promise.all(this.#running.map((service) => service.drain()));
    await Promise.all(this.#running.map((service) => service.close()));
    await this.#afterAll();
  }
}

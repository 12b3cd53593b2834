// Shared pieces of the relay tests: a hand-driven clock with timers, a
// registry with two tenants, and a scripted delivery function.
import { sha256Hex } from "../../lib/crypto/mod.ts";
import type { Deliver, DeliveryRequest, DeliveryResult } from "../../lib/relay/mod.ts";
import { TenantRegistry } from "../../lib/relay/mod.ts";

/** The relay's test secret (the Standard Webhooks test vector's). */
export const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
export const T0 = Date.UTC(2026, 10, 1);

/** A clock moved by hand, with timers that fire when it passes their time. */
export class FakeClock {
  time = T0;
  readonly #timers: { at: number; task: () => void; live: boolean }[] = [];

  now = (): number => this.time;

  setTimer = (task: () => void, ms: number): () => void => {
    const timer = { at: this.time + ms, task, live: true };
    this.#timers.push(timer);
    return () => {
      timer.live = false;
    };
  };

  /**
   * Moves the clock, running each timer due on the way at its own time and
   * letting the work it starts settle before the clock moves on.
   */
  async advance(ms: number, settle: () => Promise<void> = () => Promise.resolve()): Promise<void> {
    const target = this.time + ms;
    await settle();
    for (;;) {
      const due = this.#timers.filter((timer) =>
        timer.live && timer.at <= target
      ).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) {
        break;
      }
      due.live = false;
      this.time = Math.max(this.time, due.at);
      due.task();
      await settle();
    }
    this.time = target;
    await settle();
  }
}

/** A counter-based random source: distinct bytes, no real randomness needed. */
export function countingRandom(): (size: number) => Uint8Array {
  let n = 0;
  return (size) => {
    const bytes = new Uint8Array(size);
    for (let i = 0; i < size; i++) bytes[i] = (++n * 131 + i) & 0xff;
    return bytes;
  };
}

/** Tenants `acme` (key `acme-key`) and `globex` (key `globex-key`), without endpoints. */
export function makeRegistry(clock: FakeClock): TenantRegistry {
  const registry = new TenantRegistry({ now: clock.now, random: countingRandom() });
  registry.addTenant("acme", [sha256Hex("acme-key")]);
  registry.addTenant("globex", [sha256Hex("globex-key")]);
  return registry;
}

/** A delivery function answering each URL with a script; records every request. */
export class ScriptedReceiver {
  readonly requests: DeliveryRequest[] = [];
  readonly #scripts = new Map<
    string,
    (n: number, request: DeliveryRequest) => DeliveryResult | Promise<DeliveryResult>
  >();
  readonly #counts = new Map<string, number>();

  /** Answers requests to `url`; `n` counts from 1. */
  on(
    url: string,
    script: (n: number, request: DeliveryRequest) => DeliveryResult | Promise<DeliveryResult>,
  ): this {
    this.#scripts.set(url, script);
    return this;
  }

  deliver: Deliver = (request) => {
    this.requests.push(request);
    const n = (this.#counts.get(request.url) ?? 0) + 1;
    this.#counts.set(request.url, n);
    const script = this.#scripts.get(request.url);
    return Promise.resolve(
      script === undefined ? { kind: "error", message: "no script" } : script(n, request),
    );
  };

  /** URLs of the requests so far, in order. */
  get order(): string[] {
    return this.requests.map((request) => request.url);
  }
}

/** A status answer. */
export function status(code: number, retryAfter?: string): DeliveryResult {
  return { kind: "response", status: code, retryAfter };
}

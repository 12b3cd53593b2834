import type { LoginLimiter } from "./types.ts";

/** Options of {@linkcode LoginThrottle}. */
export interface LoginThrottleOptions {
  /** Clock in milliseconds. */
  now: () => number;
  /**
   * Failed logins allowed per user name within the window.
   * @default {5}
   */
  maxPerUser?: number;
  /**
   * Failed logins allowed per client address within the window; 0 for no
   * address limit (behind a proxy every client shares its address).
   * @default {20}
   */
  maxPerAddress?: number;
  /**
   * The window, in milliseconds.
   * @default {900000}
   */
  windowMs?: number;
  /**
   * Names and addresses tracked before the oldest are forgotten.
   * @default {100000}
   */
  maxKeys?: number;
}

/**
 * Counts failed password logins per user name and per client address in a
 * sliding window (RFC 6749 §4.3.2 asks for brute-force protection). Past the
 * limit, logins for that name or from that address are refused, right
 * password or not, until the oldest failure leaves the window. Every attempt
 * counts from its start until it succeeds.
 */
export class LoginThrottle implements LoginLimiter {
  readonly #now: () => number;
  readonly #maxPerUser: number;
  readonly #maxPerAddress: number;
  readonly #window: number;
  readonly #maxKeys: number;
  readonly #failures = new Map<string, number[]>();

  /**
   * Creates a throttle.
   * @param options clock and limits
   */
  constructor(options: LoginThrottleOptions) {
    this.#now = options.now;
    this.#maxPerUser = options.maxPerUser ?? 5;
    this.#maxPerAddress = options.maxPerAddress ?? 20;
    this.#window = options.windowMs ?? 15 * 60_000;
    this.#maxKeys = options.maxKeys ?? 100_000;
  }

  /**
   * Starts a login attempt. An allowed attempt counts as a failure at once,
   * so that attempts running in parallel cannot pass the limit together;
   * {@linkcode LoginThrottle.succeed} takes it back.
   * @param username the user name (case-insensitive)
   * @param address the client's address
   * @returns 0 when the attempt may go on; else the seconds to wait, and nothing is counted
   */
  start(username: string, address: string): number {
    const now = this.#now();
    const userKey = `u:${username.toLowerCase()}`;
    const addressKey = `a:${address}`;
    const wait = Math.max(
      this.#wait(userKey, this.#maxPerUser, now),
      this.#maxPerAddress === 0 ? 0 : this.#wait(addressKey, this.#maxPerAddress, now),
    );
    if (wait > 0) return wait;
    for (const key of [userKey, addressKey]) {
      const times = this.#recent(key, now);
      times.push(now);
      this.#failures.delete(key);
      this.#failures.set(key, times);
    }
    while (this.#failures.size > this.#maxKeys) this.#failures.delete(this.#failures.keys().next().value!);
    return 0;
  }

  /**
   * Ends an attempt that succeeded: clears the name's failures and takes the
   * attempt back from the address's count.
   * @param username the user name
   * @param address the client's address
   */
  succeed(username: string, address: string): void {
    this.#failures.delete(`u:${username.toLowerCase()}`);
    this.#failures.get(`a:${address}`)?.pop();
  }

  #recent(key: string, now: number): number[] {
    return (this.#failures.get(key) ?? []).filter((at) => now - at < this.#window);
  }

  #wait(key: string, limit: number, now: number): number {
    const times = this.#recent(key, now);
    if (times.length < limit) return 0;
    const oldest = times[times.length - limit]!;
    return Math.max(1, Math.ceil((oldest + this.#window - now) / 1000));
  }
}

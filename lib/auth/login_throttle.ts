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
   * Failed logins allowed per client address within the window.
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
 * password or not, until the oldest failure leaves the window.
 */
export class LoginThrottle {
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
   * Seconds to wait before a login for this name from this address may be tried; 0 when it may now.
   * @param username the user name (case-insensitive)
   * @param address the client's address
   * @returns seconds to wait
   */
  retryAfter(username: string, address: string): number {
    const now = this.#now();
    return Math.max(
      this.#wait(`u:${username.toLowerCase()}`, this.#maxPerUser, now),
      this.#wait(`a:${address}`, this.#maxPerAddress, now),
    );
  }

  /**
   * Records a failed login.
   * @param username the user name tried
   * @param address the client's address
   */
  fail(username: string, address: string): void {
    const now = this.#now();
    for (const key of [`u:${username.toLowerCase()}`, `a:${address}`]) {
      const times = this.#recent(key, now);
      times.push(now);
      this.#failures.delete(key);
      this.#failures.set(key, times);
    }
    while (this.#failures.size > this.#maxKeys) this.#failures.delete(this.#failures.keys().next().value!);
  }

  /**
   * Clears a user name's failures after a successful login.
   * @param username the user name
   */
  succeed(username: string): void {
    this.#failures.delete(`u:${username.toLowerCase()}`);
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

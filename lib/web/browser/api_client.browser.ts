// The pages' API client, shared by the water-data explorer and the relay
// portal (each page's folder imports it; the page routes serve it beside the
// page's own modules as `api_client.js`): a request with the user's key,
// JSON errors as an ApiError, a 429 (and a GET's 503) waited out as
// Retry-After says, and, where the API meters a key (the explorer), one
// request at a time paced by the answers' RateLimit headers. No side effect
// on import.

/** An answer the API refused or failed, with its status and the message of its error body. */
export class ApiError extends Error {
  readonly status: number;

  /**
   * @param status the answer's HTTP status
   * @param message the error body's message, or the status line
   */
  constructor(status: number, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

/**
 * How long to wait before asking again: for 429 and 503 the `Retry-After`
 * seconds (1 when absent or not a number of seconds), for anything else, and
 * after `maxAttempts` tries, never (undefined).
 * @param status the answer's status
 * @param retryAfter its `Retry-After` header
 * @param attempt how many tries were made so far (1 after the first)
 * @param maxAttempts tries in all
 * @returns milliseconds, or undefined to give up
 */
export function retryDelayMs(
  status: number,
  retryAfter: string | null,
  attempt: number,
  maxAttempts = 6,
): number | undefined {
  if ((status !== 429 && status !== 503) || attempt >= maxAttempts) return undefined;
  const seconds = retryAfter !== null && /^\d+$/.test(retryAfter.trim())
    ? Number(retryAfter.trim())
    : 1;
  return Math.min(seconds, 60) * 1000;
}

// --- Pacing: the key's rate limit, as the API's RateLimit headers give it --------

/**
 * What the API last said of the key's limit: a bucket of `limit` requests,
 * refilled from empty in `windowSeconds`, of which `remaining` were left when
 * the answer came (`at`, ms since the epoch).
 */
export interface RateState {
  readonly limit: number;
  readonly windowSeconds: number;
  readonly remaining: number;
  readonly at: number;
}

/** What {@linkcode readRateLimit} reads: a `Headers`, or anything with its `get`. */
export interface HeaderSource {
  get(name: string): string | null;
}

/**
 * The key's limit from an answer's headers: `RateLimit-Policy: <limit>;w=<window>`
 * (its slowest policy, when it lists several; a `q=` parameter is the
 * limit too) and `RateLimit-Remaining`; without a policy, the rate from
 * `RateLimit-Limit`, `RateLimit-Remaining` and `RateLimit-Reset` (the
 * seconds until the bucket is full again).
 * @param headers the answer's headers
 * @param at when the answer came, ms
 * @returns the state, or undefined when the answer says nothing of a limit
 */
export function readRateLimit(headers: HeaderSource, at: number): RateState | undefined {
  const remaining = wholeNumber(headers.get("ratelimit-remaining"));
  if (remaining === undefined) return undefined;
  let best: { limit: number; windowSeconds: number } | undefined;
  for (const item of (headers.get("ratelimit-policy") ?? "").split(",")) {
    const [first = "", ...params] = item.split(";").map((part) => part.trim());
    let limit = wholeNumber(first);
    let windowSeconds: number | undefined;
    for (const param of params) {
      const [name, value] = param.split("=").map((part) => part.trim());
      if (name === "w") windowSeconds = positiveNumber(value);
      if (name === "q") limit = wholeNumber(value ?? null);
    }
    if (limit === undefined || windowSeconds === undefined || limit < 1) continue;
    if (best === undefined || limit / windowSeconds < best.limit / best.windowSeconds) {
      best = { limit, windowSeconds };
    }
  }
  if (best === undefined) {
    const limit = wholeNumber(headers.get("ratelimit-limit"));
    const reset = positiveNumber(headers.get("ratelimit-reset") ?? undefined);
    if (limit === undefined || reset === undefined || limit <= remaining) return undefined;
    // The bucket fills from `remaining` to `limit` in `reset` seconds: from empty, in this long.
    best = { limit, windowSeconds: (reset * limit) / (limit - remaining) };
  }
  return { ...best, remaining, at };
}

function wholeNumber(text: string | null): number | undefined {
  return text !== null && /^\s*\d+\s*$/.test(text) ? Number(text) : undefined;
}

function positiveNumber(text: string | undefined): number | undefined {
  const value = text !== undefined && /^\s*\d+(?:\.\d+)?\s*$/.test(text) ? Number(text) : NaN;
  return value > 0 ? value : undefined;
}

/**
 * How long to wait before the next request so that the key has a request
 * left for it: none while the last answer said one remains; otherwise until
 * the bucket, refilling at `limit / windowSeconds` a second since that answer,
 * holds one again. (The API counted before answering, so this errs long.)
 * @param state what the last answer said, if anything
 * @param now the time, ms
 * @returns milliseconds, 0 to send now
 */
export function rateDelayMs(state: RateState | undefined, now: number): number {
  if (state === undefined || state.remaining >= 1) return 0;
  const perMs = state.limit / state.windowSeconds / 1000;
  return Math.max(0, Math.ceil(state.at + (1 - state.remaining) / perMs - now));
}

// --- Requests ------------------------------------------------------------------

/** Options of {@linkcode createApiClient}. */
export interface ApiClientOptions {
  /** The headers that carry the user's key, asked for each request (the key may change), e.g. `{ "x-api-key": key }`. */
  readonly credentials: () => Readonly<Record<string, string>>;
  /**
   * Where the API meters the key (the water-data API does): requests go one
   * at a time, each sent once the one before has been read whole, and wait,
   * when the last answer left the key no request, until its bucket holds one
   * again. What the API said is kept in the tab's session storage under this
   * name, so that a page loaded again at once paces its first requests too.
   * @default no pacing: requests go as they are made
   */
  readonly pace?: string;
  /** Told before a 429 (or a GET's 503) is waited out, e.g. to say so on the page. */
  readonly onRetry?: (delayMs: number, status: number) => void;
  /**
   * Tries in all for a request answered 429 (or, a `GET`, 503).
   * @default {6}
   */
  readonly maxAttempts?: number;
}

/** What a request asks; by default a `GET` of JSON. */
export interface ApiRequest<T> {
  /** @default {"GET"} */
  readonly method?: string;
  /** Sent as JSON. */
  readonly body?: unknown;
  /** @default {"application/json"} */
  readonly accept?: string;
  /**
   * Drops the answer: a request not sent yet is not sent; one in flight is
   * read whole (the API may hold its place a moment longer) and dropped.
   */
  readonly signal?: AbortSignal;
  /**
   * Reads a successful answer.
   * @default its JSON, or undefined for an empty body
   */
  readonly read?: (response: Response) => Promise<T>;
}

/** Asks the API of the page's own origin with the user's key. */
export interface ApiClient {
  /**
   * Asks for a path of this origin and reads the answer.
   * @param path e.g. `/v1/odata/v4/Locations?$top=10`
   * @param request the method, body, accepted type, cancel signal and reader
   * @throws {ApiError} when the API refuses (any status but 2xx, once 429s, and a GET's 503s, are waited out)
   */
  request<T>(path: string, request?: ApiRequest<T>): Promise<T>;
}

const NEVER = new AbortController().signal;

/**
 * An API client for a page: each request carries the key, never cookies or
 * a referrer, and is never cached; a 429 (and, for a `GET`, a 503) is asked
 * again after `Retry-After`; a refusal is an {@linkcode ApiError} with the
 * message of the API's JSON error body. With `pace`, requests go one at a
 * time, paced by the API's RateLimit headers.
 * @param options the key's headers; pacing; who is told of a retry
 * @returns the client
 * @example
 * ```ts
 * const api = createApiClient({ credentials: () => ({ authorization: `Bearer ${key}` }) });
 * const endpoints = await api.request<{ data: Endpoint[] }>("/webhook/endpoints");
 * ```
 */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const pace = options.pace;
  const maxAttempts = options.maxAttempts ?? 6;
  let queue: Promise<unknown> = Promise.resolve();
  let rate = pace === undefined ? undefined : readStoredRate(pace);

  function noteRate(response: Response): void {
    if (pace === undefined) return;
    const said = readRateLimit(response.headers, Date.now());
    if (said === undefined) return;
    rate = said;
    try {
      sessionStorage.setItem(pace, JSON.stringify(said));
    } catch {
      // Storage full or refused: this page paces itself all the same.
    }
  }

  async function send<T>(path: string, request: ApiRequest<T>): Promise<T> {
    const signal = request.signal ?? NEVER;
    const method = request.method ?? "GET";
    const headers: Record<string, string> = {
      ...options.credentials(),
      accept: request.accept ?? "application/json",
    };
    if (request.body !== undefined) headers["content-type"] = "application/json";
    for (let attempt = 1;; attempt++) {
      signal.throwIfAborted();
      const pause = rateDelayMs(rate, Date.now());
      if (pause > 0) await wait(pause, signal);
      const response = await fetch(path, {
        method,
        headers,
        ...(request.body === undefined ? {} : { body: JSON.stringify(request.body) }),
        credentials: "omit",
        cache: "no-store",
        referrerPolicy: "no-referrer",
      });
      noteRate(response);
      if (response.ok) {
        const value = await (request.read ?? readJson<T>)(response);
        signal.throwIfAborted();
        return value;
      }
      // A 429 was refused before it was handled: any method may ask again. A 503 only a GET, which changes nothing.
      const again = response.status === 429 || method === "GET" || method === "HEAD";
      const delay = again
        ? retryDelayMs(response.status, response.headers.get("retry-after"), attempt, maxAttempts)
        : undefined;
      if (delay === undefined) {
        const message = await errorMessage(response);
        signal.throwIfAborted();
        throw new ApiError(response.status, message);
      }
      await response.arrayBuffer();
      signal.throwIfAborted();
      options.onRetry?.(delay, response.status);
      await wait(delay, signal);
    }
  }

  return {
    request<T>(path: string, request: ApiRequest<T> = {}): Promise<T> {
      if (pace === undefined) return send(path, request);
      // One at a time: the API lets a key have one request in flight (a second gets 429).
      const task = (): Promise<T> => send(path, request);
      const run = queue.then(task, task);
      queue = run.catch(() => undefined);
      return run;
    },
  };
}

/** The rate a page stored under a name, when it is one. */
function readStoredRate(name: string): RateState | undefined {
  try {
    const stored = JSON.parse(sessionStorage.getItem(name) ?? "null") as Partial<RateState> | null;
    const values = [stored?.limit, stored?.windowSeconds, stored?.remaining, stored?.at];
    return values.every((value) => typeof value === "number" && Number.isFinite(value))
      ? (stored as RateState)
      : undefined;
  } catch {
    return undefined;
  }
}

async function readJson<T>(response: Response): Promise<T> {
  const text = await response.text();
  return (text === "" ? undefined : JSON.parse(text)) as T;
}

/** The message of the API's JSON error body (`{"error": {"message"}}`), else the status line. */
async function errorMessage(response: Response): Promise<string> {
  try {
    const body = (await response.json()) as { error?: { message?: unknown } };
    if (typeof body.error?.message === "string") return body.error.message;
  } catch {
    // Not a JSON error body: the status says it.
  }
  return `${response.status} ${response.statusText}`.trim();
}

/** Resolves after `ms`, or rejects with the signal's reason once it is aborted. */
function wait(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    signal.throwIfAborted();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}

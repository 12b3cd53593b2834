// A lean closed-loop HTTP/1.1 load generator for benchmarks: each connection
// sends one request, waits for the whole response, then sends the next, until
// the time is up. It does far less work per request than autocannon, so on a
// small machine the server under test, not the client, sets the pace.
// Loopback addresses only.
import { connect, type Socket } from "node:net";

/** What to send, where, how hard and for how long. */
export interface LoadOptions {
  readonly url: string;
  readonly method: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly connections: number;
  readonly seconds: number;
  /**
   * Paths (with their queries) to send in turn instead of the URL's own, one
   * after another across all connections, on the URL's host: a server that
   * keeps answers by request then answers each anew once there are more
   * paths than it keeps.
   */
  readonly paths?: readonly string[];
}

/** What a run measured. */
export interface LoadResult {
  readonly requests: number;
  readonly perSecond: number;
  /** Responses whose status was not 2xx. */
  readonly non2xx: number;
  /** The first response's status line and body, for checks. */
  readonly sample: string;
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|\[::1\]|localhost)$/;
const HEADER_END = Buffer.from("\r\n\r\n");

/**
 * Runs `connections` closed loops against `url` for `seconds`.
 * @param options the request and the load
 * @returns requests completed, their rate and the non-2xx count
 * @throws {Error} for a host that is not a loopback address, or a connection error
 */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const url = new URL(options.url);
  if (!LOOPBACK.test(url.hostname)) {
    throw new Error(`Cannot load ${url.host}: benchmarks send traffic to loopback addresses only`);
  }
  const body = Buffer.from(options.body);
  const variants = (options.paths ?? [`${url.pathname}${url.search}`]).map((path) => {
    const head = [
      `${options.method} ${path} HTTP/1.1`,
      `host: ${url.host}`,
      `content-length: ${body.length}`,
    ];
    for (const [name, value] of Object.entries(options.headers)) head.push(`${name}: ${value}`);
    return Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"), body]);
  });
  let sent = 0;
  const nextRequest = (): Buffer => variants[sent++ % variants.length]!;
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || 80);

  let requests = 0;
  let non2xx = 0;
  let sample = "";
  let stopAt = Number.POSITIVE_INFINITY;
  const started = performance.now();
  stopAt = started + options.seconds * 1000;

  const loops = Array.from(
    { length: options.connections },
    () =>
      new Promise<void>((resolve, reject) => {
        const socket: Socket = connect({ host, port, noDelay: true });
        let pending: Buffer = Buffer.alloc(0);
        socket.on("connect", () => socket.write(nextRequest()));
        socket.on("error", reject);
        socket.on("close", () => resolve());
        socket.on("data", (chunk: Buffer) => {
          pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
          for (;;) {
            const size = responseSize(pending);
            if (size === 0) return;
            const status = pending[9]! - 48;
            if (status !== 2) non2xx++;
            if (sample === "") sample = pending.subarray(0, size).toString("latin1");
            requests++;
            pending = pending.subarray(size);
            if (performance.now() >= stopAt) {
              socket.end();
              return;
            }
            socket.write(nextRequest());
          }
        });
      }),
  );
  await Promise.all(loops);
  const seconds = (performance.now() - started) / 1000;
  return { requests, perSecond: requests / seconds, non2xx, sample };
}

/** A response read by a {@linkcode LeanConnection}. */
export interface LeanResponse {
  readonly status: number;
  /** The body as text (a chunked body keeps its chunk framing: callers here get lengths). */
  readonly body: string;
}

/**
 * One keep-alive HTTP/1.1 connection for scripted load whose requests differ
 * (a body each, an answer read), as lean as {@linkcode runLoad}: a request is
 * one write, a response is parsed only as far as its status and body.
 * Requests go one after another. Loopback addresses only.
 */
export class LeanConnection {
  readonly #socket: Socket;
  readonly #host: string;
  #pending: Buffer = Buffer.alloc(0);
  #waiting:
    | { resolve: (response: LeanResponse) => void; reject: (error: Error) => void }
    | undefined;

  /**
   * Opens the connection.
   * @param origin `http://127.0.0.1:PORT`
   * @throws {Error} for a host that is not a loopback address
   */
  constructor(origin: string) {
    const url = new URL(origin);
    if (!LOOPBACK.test(url.hostname)) {
      throw new Error(
        `Cannot load ${url.host}: benchmarks send traffic to loopback addresses only`,
      );
    }
    this.#host = url.host;
    this.#socket = connect({
      host: url.hostname.replace(/^\[|\]$/g, ""),
      port: Number(url.port || 80),
      noDelay: true,
    });
    const fail = (error: Error) => {
      const waiting = this.#waiting;
      this.#waiting = undefined;
      waiting?.reject(error);
    };
    this.#socket.on("error", fail);
    this.#socket.on("close", () => fail(new Error(`The connection to ${this.#host} closed`)));
    this.#socket.on("data", (chunk: Buffer) => {
      this.#pending = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
      const size = responseSize(this.#pending);
      if (size === 0) return;
      const response = this.#pending.subarray(0, size);
      this.#pending = this.#pending.subarray(size);
      const bodyStart = response.indexOf(HEADER_END) + 4;
      const waiting = this.#waiting;
      this.#waiting = undefined;
      waiting?.resolve({
        status: Number(response.toString("latin1", 9, 12)),
        body: response.toString("utf8", bodyStart),
      });
    });
  }

  /**
   * Sends one request and reads its response.
   * @param method the method
   * @param path the path and query
   * @param headers more headers
   * @param body the body, or "" for none
   * @returns the status and body
   */
  request(
    method: string,
    path: string,
    headers: Readonly<Record<string, string>>,
    body = "",
  ): Promise<LeanResponse> {
    if (this.#waiting !== undefined) {
      throw new Error("A LeanConnection sends one request at a time");
    }
    const bytes = Buffer.from(body);
    const head = [
      `${method} ${path} HTTP/1.1`,
      `host: ${this.#host}`,
      `content-length: ${bytes.length}`,
    ];
    for (const [name, value] of Object.entries(headers)) head.push(`${name}: ${value}`);
    return new Promise((resolve, reject) => {
      this.#waiting = { resolve, reject };
      this.#socket.write(
        Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`, "latin1"), bytes]),
      );
    });
  }

  /** Closes the connection. */
  close(): void {
    this.#socket.removeAllListeners("close");
    this.#socket.end();
  }
}

/** Bytes of the first whole response in `data`, or 0 if it has not all arrived. */
function responseSize(data: Buffer): number {
  const end = data.indexOf(HEADER_END);
  if (end === -1) return 0;
  const head = data.toString("latin1", 0, end).toLowerCase();
  const length = /\r\ncontent-length: *(\d+)/.exec(head);
  const bodyStart = end + 4;
  if (length !== null) {
    const total = bodyStart + Number(length[1]);
    return data.length >= total ? total : 0;
  }
  if (!head.includes("transfer-encoding: chunked")) {
    const status = data.toString("latin1", 9, 12);
    if (status === "204" || status === "304") return bodyStart;
    throw new Error(`Cannot measure a response without a length: ${head.split("\r\n")[0]}`);
  }
  let at = bodyStart;
  for (;;) {
    const lineEnd = data.indexOf("\r\n", at);
    if (lineEnd === -1) return 0;
    const chunk = Number.parseInt(data.toString("latin1", at, lineEnd), 16);
    const next = lineEnd + 2 + chunk + 2;
    if (data.length < next) return 0;
    if (chunk === 0) return next;
    at = next;
  }
}

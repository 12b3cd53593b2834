import { STATUS_CODES } from "node:http";
import { errorBody, statusOf } from "./error_response.ts";
import { HttpError } from "./errors.ts";

/** Options of {@linkcode createClientErrorListener}. */
export interface ClientErrorListenerOptions {
  /**
   * The server's `maxHeaderSize`, for the message of a 431.
   * @default {16384}, Node's
   */
  readonly maxHeaderBytes?: number;
  /** Told of every answer it writes (its status), e.g. for a log or a counter. */
  readonly onAnswer?: (status: number) => void;
}

/**
 * What the listener needs of the connection Node's `clientError` event gives
 * (a `net.Socket` or `tls.TLSSocket` is one), so that its type names nothing
 * of Node's.
 */
export interface ClientErrorSocket {
  readonly writable: boolean;
  end(chunk: string, callback: () => void): unknown;
  destroy(): unknown;
  /** Reads on, discarding (a socket that has it lingers after the answer). */
  resume?(): unknown;
  /** Told once the peer has closed its side, or the socket is closed. */
  once?(event: "end" | "close", listener: () => void): unknown;
}

/**
 * How long a refused connection is read on, discarding, after its answer is
 * sent, for the client to finish sending what it was sending (a 120 KB URL)
 * and read the answer: closing at once, with its bytes unread, resets the
 * connection, and a client still writing (curl over TLS) fails with a send
 * error instead of reading the 431.
 */
const LINGER_MS = 2000;

/** Reads a socket on, discarding, until its peer closes or {@linkcode LINGER_MS} pass; then closes it. */
function linger(socket: ClientErrorSocket): void {
  if (socket.resume === undefined || socket.once === undefined) {
    socket.destroy();
    return;
  }
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref?.();
  const done = (): void => {
    clearTimeout(timer);
    socket.destroy();
  };
  socket.once("end", done);
  socket.once("close", done);
  socket.resume();
}

/** What the listener reads of a socket's in-flight response: Node's own field, undocumented but long stable. */
interface SocketWithResponse {
  readonly _httpMessage?: { readonly headersSent?: boolean } | null;
}

/** Sockets already answered: more bytes after the fault make the parser fail again. */
const answered = new WeakSet<object>();

/**
 * A `clientError` listener for `node:http` servers (and the HTTP/1.1 side of
 * `node:http2`'s secure server with `allowHTTP1`): what Node's parser refuses
 * on its own, before any handler sees a request, is answered with the JSON
 * error body every other error carries (`{"error": {"code", "message"},
 * "errors": [...]}`) instead of Node's bare status line: 431 for a request
 * line and headers above the limit (`ERR_HTTP_HEADERS_TOO_LARGE`), 408 for a
 * request that did not arrive in time (`ERR_HTTP_REQUEST_TIMEOUT`), 413 for
 * oversized chunk extensions (`ERR_HTTP_BODY_TOO_LARGE`) and 400 for
 * anything else it cannot parse (`ERR_HTTP_BAD_REQUEST`). The answer says
 * `Connection: close`, and once it is sent the connection is read on,
 * discarding, until the client closes it (at most 2 s), then closed. A
 * socket that cannot be written to, or whose response is already under way,
 * is only closed. The refused bytes are never echoed.
 * @param options the header limit (for the message) and a hook for each answer
 * @returns the listener
 * @example
 * ```ts
 * const server = createServer(createNodeListener(handler));
 * server.on("clientError", createClientErrorListener());
 * ```
 */
export function createClientErrorListener(
  options: ClientErrorListenerOptions = {},
): (error: Error, socket: ClientErrorSocket) => void {
  const maxHeaderBytes = options.maxHeaderBytes ?? 16_384;
  return function onClientError(error: Error, socket: ClientErrorSocket): void {
    if (answered.has(socket)) return;
    const inFlight = (socket as ClientErrorSocket & SocketWithResponse)._httpMessage;
    if (
      !socket.writable || inFlight?.headersSent === true ||
      (error as { code?: unknown }).code === "ECONNRESET"
    ) {
      socket.destroy();
      return;
    }
    answered.add(socket);
    const refusal = refusalOf(error, maxHeaderBytes);
    const status = statusOf(refusal);
    const body = errorBody(refusal);
    const head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\n` +
      "Content-Type: application/json; charset=utf-8\r\n" +
      `Content-Length: ${new TextEncoder().encode(body).length}\r\n` +
      "Connection: close\r\n\r\n";
    // Sent, then read on until the client has closed its side (or briefly), then closed.
    socket.end(head + body, () => linger(socket));
    options.onAnswer?.(status);
  };
}

/** The error the answer carries, from what the parser said. */
function refusalOf(error: Error, maxHeaderBytes: number): HttpError {
  const code = (error as { code?: unknown }).code;
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return new HttpError(
        "ERR_HTTP_HEADERS_TOO_LARGE",
        `Cannot read the request: its request line and headers are larger than ${maxHeaderBytes} bytes; send a shorter URL or fewer headers`,
      );
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return new HttpError(
        "ERR_HTTP_BODY_TOO_LARGE",
        "Cannot read the request body: its chunk extensions are too large",
      );
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new HttpError(
        "ERR_HTTP_REQUEST_TIMEOUT",
        "Cannot read the request: it did not arrive whole in time",
      );
    default: {
      // llhttp's reason names the fault ("Invalid method encountered"), never the bytes.
      const reason = (error as { reason?: unknown }).reason;
      const why = typeof reason === "string" && reason !== ""
        ? reason.charAt(0).toLowerCase() + reason.slice(1)
        : "it is not an HTTP/1.1 request";
      return new HttpError("ERR_HTTP_BAD_REQUEST", `Cannot parse the request: ${why}`);
    }
  }
}

import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createSecureServer, type Http2Session } from "node:http2";
import type { Socket } from "node:net";
import { createSecureContext } from "node:tls";
import { ConfigError } from "../config/mod.ts";
import { createClientErrorListener, type NodeListener } from "../http/mod.ts";

/** A listening server of either kind, closed the same way. */
export interface NodeServer {
  /** `http` or `https`. */
  readonly scheme: "http" | "https";
  listen(port: number, host: string): Promise<number>;
  /** Stops accepting; resolves once every connection has ended. */
  close(): Promise<void>;
  /** Ends connections with nothing in flight (HTTP/2 sessions finish their streams first). */
  closeIdle(): void;
  /** Ends every connection at once. */
  closeAll(): void;
}

/** Limits of the HTTP/1.1 server (and of HTTP/1.1 on the secure one). */
const HTTP1_OPTIONS = {
  requestTimeout: 60_000,
  headersTimeout: 15_000,
  keepAliveTimeout: 5_000,
  maxHeaderSize: 16_384,
} as const;

/** The certificate and key of `TLS_CERT_FILE` and `TLS_KEY_FILE`, checked: PEM text. */
export interface TlsFiles {
  readonly cert: string;
  readonly key: string;
}

/**
 * Reads `TLS_CERT_FILE` and `TLS_KEY_FILE` (PEM): both, or neither for
 * cleartext HTTP/1.1.
 * @param certFile the certificate chain's path, or ""
 * @param keyFile the private key's path, or ""
 * @returns the files, or undefined when neither is set
 * @throws {ConfigError} naming the variable whose file is missing, unreadable, not PEM, or does not fit the other
 */
export function readTlsFiles(certFile: string, keyFile: string): TlsFiles | undefined {
  if (certFile === "" && keyFile === "") return undefined;
  if (certFile === "") {
    throw new ConfigError(
      "TLS_CERT_FILE",
      "Cannot start: TLS_KEY_FILE is set but TLS_CERT_FILE is not; set both for HTTPS, or neither",
    );
  }
  if (keyFile === "") {
    throw new ConfigError(
      "TLS_KEY_FILE",
      "Cannot start: TLS_CERT_FILE is set but TLS_KEY_FILE is not; set both for HTTPS, or neither",
    );
  }
  const read = (variable: string, path: string): string => {
    try {
      return readFileSync(path, "utf8");
    } catch (error) {
      throw new ConfigError(
        variable,
        `Cannot start: cannot read ${variable} ${path}: ${(error as Error).message}`,
      );
    }
  };
  const cert = read("TLS_CERT_FILE", certFile);
  const key = read("TLS_KEY_FILE", keyFile);
  try {
    createSecureContext({ cert });
  } catch (error) {
    throw new ConfigError(
      "TLS_CERT_FILE",
      `Cannot start: TLS_CERT_FILE ${certFile} is not a PEM certificate: ${
        (error as Error).message
      }`,
    );
  }
  try {
    createSecureContext({ cert, key });
  } catch (error) {
    throw new ConfigError(
      "TLS_KEY_FILE",
      `Cannot start: TLS_KEY_FILE ${keyFile} is not the PEM private key of TLS_CERT_FILE: ${
        (error as Error).message
      }`,
    );
  }
  return { cert, key };
}

/**
 * Makes the server `listen` runs: cleartext HTTP/1.1, or with TLS files
 * HTTPS with HTTP/2 (`node:http2`, `allowHTTP1` so that HTTP/1.1 clients
 * keep working on the same port, ALPN choosing). What Node's HTTP/1.1 parser
 * refuses on its own (431, 400, 413, 408) is answered with the JSON error
 * body, on either (`createClientErrorListener`).
 * @param listener the request listener (the node adapter serves both APIs)
 * @param tls the certificate and key, or undefined
 * @returns the server, not yet listening
 */
export function createNodeServer(listener: NodeListener, tls: TlsFiles | undefined): NodeServer {
  if (tls === undefined) {
    const server = createServer(HTTP1_OPTIONS, listener);
    server.on(
      "clientError",
      createClientErrorListener({ maxHeaderBytes: HTTP1_OPTIONS.maxHeaderSize }),
    );
    return {
      scheme: "http",
      listen: (port, host) => listenOn(server, port, host),
      close: () => new Promise((resolve) => server.close(() => resolve())),
      closeIdle: () => server.closeIdleConnections(),
      closeAll: () => server.closeAllConnections(),
    };
  }
  const server = createSecureServer({
    ...tls,
    allowHTTP1: true,
    maxSessionMemory: 32,
    settings: { maxHeaderListSize: HTTP1_OPTIONS.maxHeaderSize },
  }, listener);
  // HTTP/1.1 over TLS: the same parser, the same answers (HTTP/2 refuses oversized headers in its own framing).
  server.on("clientError", createClientErrorListener());
  const sockets = new Set<Socket>();
  const sessions = new Set<Http2Session>();
  server.on("secureConnection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  server.on("session", (session: Http2Session) => {
    sessions.add(session);
    session.once("close", () => sessions.delete(session));
  });
  // An HTTP/1.1 connection on the secure port idles no longer than on the plain one.
  server.setTimeout(HTTP1_OPTIONS.requestTimeout);
  return {
    scheme: "https",
    listen: (port, host) => listenOn(server, port, host),
    close: () => new Promise((resolve) => server.close(() => resolve())),
    closeIdle: () => {
      for (const session of sessions) session.close();
    },
    closeAll: () => {
      for (const socket of sockets) socket.destroy();
    },
  };
}

function listenOn(
  server: {
    listen(port: number, host: string, done: () => void): unknown;
    once(event: "error", listener: (error: NodeJS.ErrnoException) => void): unknown;
    address(): unknown;
  },
  port: number,
  host: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", (error) => {
      reject(
        error.code === "EADDRINUSE"
          ? new ConfigError(
            "PORT",
            `Cannot start: port ${port} is in use; choose another with PORT (or WEBHOOK_PORT)`,
          )
          : error,
      );
    });
    server.listen(port, host, () => {
      const address = server.address();
      resolve(
        typeof address === "object" && address !== null && "port" in address
          ? Number(address.port)
          : port,
      );
    });
  });
}

// A TCP proxy on 127.0.0.1 that a test puts between a client and its server
// (the test's own PostgreSQL), to make the network fail as networks do:
// stall (connections are accepted, then every byte is held both ways, closes
// included, until the stall ends, as a link that drops every packet and then
// comes back) and drop (every connection reset, and new ones reset as they
// come, as a server whose host went away).
import { once } from "node:events";
import { createConnection, createServer, type Socket } from "node:net";

/** A proxy a test controls. */
export interface TcpProxy {
  /** The loopback port it listens on. */
  readonly port: number;
  /** Connections open through it now. */
  readonly connections: number;
  /**
   * A URL with its host and port replaced by the proxy's, e.g. a DATABASE_URL that goes through it.
   * @param url the server's URL
   */
  via(url: string): string;
  /** Holds every byte (and close) both ways, of connections open and of those accepted meanwhile, until {@linkcode TcpProxy.resume}. */
  stall(): void;
  /** Resets every connection, and resets new ones as they come, until {@linkcode TcpProxy.resume}. */
  drop(): void;
  /** Passes bytes again: what a stall held goes on first, in order. */
  resume(): void;
  close(): Promise<void>;
}

/** End of a direction, held like the bytes before it. */
const END = Symbol("end");

interface Pair {
  readonly client: Socket;
  upstream: Socket | undefined;
  /** Held on the way to the server, and to the client. */
  readonly toServer: (Buffer | typeof END)[];
  readonly toClient: (Buffer | typeof END)[];
}

/**
 * Starts a proxy to a server on the loopback.
 * @param target the server's port (on 127.0.0.1)
 * @returns the proxy, passing bytes
 */
export async function startTcpProxy(target: number): Promise<TcpProxy> {
  let mode: "pass" | "stall" | "drop" = "pass";
  const pairs = new Set<Pair>();
  /**
   * Every socket open, both ways: a pair can leave {@linkcode pairs} while one
   * of its sockets stays open (half-open, its peer's end held), and a close
   * must end those too, or the server would wait for them for ever.
   */
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };

  function send(
    socket: Socket | undefined,
    held: (Buffer | typeof END)[],
    item: Buffer | typeof END,
  ): void {
    if (mode !== "pass" || socket === undefined || held.length > 0) {
      held.push(item);
      return;
    }
    deliver(socket, item);
  }

  function deliver(socket: Socket, item: Buffer | typeof END): void {
    if (socket.destroyed) return;
    if (item === END) socket.end();
    else socket.write(item);
  }

  function connect(pair: Pair): void {
    const upstream = createConnection({ host: "127.0.0.1", port: target });
    track(upstream);
    pair.upstream = upstream;
    upstream.on("data", (chunk: Buffer) => send(pair.client, pair.toClient, chunk));
    upstream.on("end", () => send(pair.client, pair.toClient, END));
    upstream.on("error", () => {});
    upstream.on("close", () => {
      if (mode === "pass" && pair.toClient.length === 0) pair.client.destroy();
      pairs.delete(pair);
    });
  }

  const server = createServer({ allowHalfOpen: true }, (client) => {
    track(client);
    client.on("error", () => {});
    if (mode === "drop") {
      client.resetAndDestroy();
      return;
    }
    const pair: Pair = { client, upstream: undefined, toServer: [], toClient: [] };
    pairs.add(pair);
    client.on("data", (chunk: Buffer) => send(pair.upstream, pair.toServer, chunk));
    client.on("end", () => send(pair.upstream, pair.toServer, END));
    client.on("close", () => {
      if (mode === "pass" && pair.toServer.length === 0) pair.upstream?.destroy();
      if (pair.upstream === undefined) pairs.delete(pair);
    });
    // Accepted during a stall: the server hears of it when the stall ends.
    if (mode === "pass") connect(pair);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;

  return {
    port,
    get connections() {
      return pairs.size;
    },
    via(url) {
      const next = new URL(url);
      next.hostname = "127.0.0.1";
      next.port = String(port);
      return next.href;
    },
    stall() {
      mode = "stall";
    },
    drop() {
      mode = "drop";
      for (const pair of pairs) {
        pair.client.resetAndDestroy();
        pair.upstream?.resetAndDestroy();
      }
      pairs.clear();
    },
    resume() {
      mode = "pass";
      for (const pair of [...pairs]) {
        if (pair.upstream === undefined) {
          if (pair.client.destroyed && pair.toServer.length === 0) {
            pairs.delete(pair);
            continue;
          }
          connect(pair);
        }
        for (const item of pair.toServer.splice(0)) deliver(pair.upstream!, item);
        for (const item of pair.toClient.splice(0)) deliver(pair.client, item);
        if (pair.client.destroyed) pair.upstream!.end();
        if (pair.upstream!.destroyed) pair.client.destroy();
      }
    },
    async close() {
      mode = "drop";
      pairs.clear();
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, "close");
    },
  };
}

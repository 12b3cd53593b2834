import { BlockList, isIP } from "node:net";

/**
 * The one header family trusted proxies write (`TRUST_PROXY_HEADERS`):
 * `x-forwarded` (`X-Forwarded-For`, `-Proto`, `-Host`: nginx, HAProxy, load
 * balancers) or `forwarded` (RFC 7239). The other is ignored, since a proxy
 * passes a client's copy of a header it does not write through unchanged.
 */
export type ForwardedHeaders = "x-forwarded" | "forwarded";

/** The proxies whose forwarding headers count (`TRUST_PROXY`). */
export interface TrustedProxies {
  /** The CIDRs, as given, for messages. */
  readonly ranges: readonly string[];
  /** Whether an address (as a socket gives it, IPv4-mapped IPv6 included) is a trusted proxy. */
  trusts(address: string): boolean;
}

/** What a request says of itself once trusted proxies' headers are read. */
export interface Forwarded {
  /** The client's address: the nearest one in the chain that is not a trusted proxy. */
  readonly client: string;
  /** `http` or `https` as the client used it, when a trusted proxy said so. */
  readonly proto: string | undefined;
  /** The host the client asked for, when a trusted proxy said so. */
  readonly host: string | undefined;
}

const HOST = /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

/**
 * Parses `TRUST_PROXY`: comma-separated CIDRs (IPv4 or IPv6; a bare address
 * is one host). Empty: no proxy is trusted, and forwarding headers are ignored.
 * @param text e.g. `10.0.0.0/8, 127.0.0.1`
 * @returns the trusted proxies
 * @throws {RangeError} naming the first entry that is not a CIDR
 */
export function parseTrustedProxies(text: string): TrustedProxies {
  const ranges = text.split(",").map((part) => part.trim()).filter((part) => part !== "");
  const v4 = new BlockList();
  const v6 = new BlockList();
  for (const range of ranges) {
    const [address = "", prefixText, extra] = range.split("/");
    const family = isIP(address);
    const max = family === 4 ? 32 : 128;
    const prefix = prefixText === undefined
      ? max
      : /^[0-9]{1,3}$/.test(prefixText)
      ? Number(prefixText)
      : Number.NaN;
    if (family === 0 || extra !== undefined || !(prefix >= 0 && prefix <= max)) {
      throw new RangeError(`"${range}" is not a CIDR such as 10.0.0.0/8 or ::1`);
    }
    if (family === 4) v4.addSubnet(address, prefix, "ipv4");
    else v6.addSubnet(address, prefix, "ipv6");
  }
  return {
    ranges,
    trusts(address: string): boolean {
      const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
      const plain = mapped ?? address;
      const family = isIP(plain);
      if (family === 4) return v4.check(plain, "ipv4");
      return family === 6 && v6.check(plain, "ipv6");
    },
  };
}

/**
 * Reads who a request came from through trusted proxies: `X-Forwarded-For`,
 * `-Proto` and `-Host`, or `Forwarded` (RFC 7239), whichever family the
 * proxies write. Only when the peer is a trusted proxy; then the chain is walked
 * from the nearest hop back while the hops are trusted proxies too, so that
 * a client cannot pass for another by writing the headers itself. Malformed
 * values are ignored.
 * @param peer the socket's remote address
 * @param headers the request's headers, lower-case names
 * @param proxies the trusted proxies
 * @param family the header family they write
 * @returns the client's address, and the scheme and host it used when a proxy said
 */
export function readForwarded(
  peer: string,
  headers: Readonly<Record<string, string | undefined>>,
  proxies: TrustedProxies,
  family: ForwardedHeaders = "x-forwarded",
): Forwarded {
  const none: Forwarded = { client: peer, proto: undefined, host: undefined };
  if (!proxies.trusts(peer)) return none;
  const forwarded = headers["forwarded"];
  if (family === "forwarded") {
    if (forwarded === undefined) return none;
    const elements = forwarded.split(",").map(parseElement);
    // The nearest hop first: each element was added by the proxy that received the request from its `for`.
    for (let i = elements.length - 1; i >= 0; i--) {
      const element = elements[i]!;
      const client = addressOf(element.get("for"));
      if (client === undefined) return none;
      if (i > 0 && proxies.trusts(client)) continue;
      return { client, proto: protoOf(element.get("proto")), host: hostOf(element.get("host")) };
    }
    return none;
  }
  const chain = (headers["x-forwarded-for"] ?? "").split(",").map((part) => part.trim()).filter((
    part,
  ) => part !== "");
  let client = peer;
  for (let i = chain.length - 1; i >= 0; i--) {
    const hop = addressOf(chain[i]);
    if (hop === undefined) break;
    client = hop;
    if (!proxies.trusts(hop)) break;
  }
  return {
    client,
    proto: protoOf(last(headers["x-forwarded-proto"])),
    host: hostOf(last(headers["x-forwarded-host"])),
  };
}

/** One `Forwarded` element: `for=...;proto=...;host=...`, names lower-cased, quotes removed. */
function parseElement(element: string): Map<string, string> {
  const pairs = new Map<string, string>();
  for (const pair of element.split(";")) {
    const at = pair.indexOf("=");
    if (at === -1) continue;
    const value = pair.slice(at + 1).trim();
    pairs.set(
      pair.slice(0, at).trim().toLowerCase(),
      value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value,
    );
  }
  return pairs;
}

/** An address of a forwarding header: bare, with a port, or `[v6]:port`; undefined when not an IP address. */
function addressOf(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const bracketed = /^\[([0-9A-Fa-f:.]+)\](?::\d+)?$/.exec(text);
  if (bracketed !== null) return isIP(bracketed[1]!) === 6 ? bracketed[1] : undefined;
  if (isIP(text) !== 0) return text;
  const withPort = /^(\d+\.\d+\.\d+\.\d+):\d+$/.exec(text);
  return withPort !== null && isIP(withPort[1]!) === 4 ? withPort[1] : undefined;
}

function protoOf(text: string | undefined): string | undefined {
  const proto = text?.trim().toLowerCase();
  return proto === "http" || proto === "https" ? proto : undefined;
}

function hostOf(text: string | undefined): string | undefined {
  const host = text?.trim();
  return host !== undefined && HOST.test(host) ? host : undefined;
}

/** The last of a comma-separated list: what the nearest proxy set. */
function last(text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const parts = text.split(",");
  return parts[parts.length - 1];
}

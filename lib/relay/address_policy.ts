import * as dns from "node:dns";
import { BlockList, isIPv4, isIPv6 } from "node:net";
import { RelayError } from "./errors.ts";

/** The answer of {@linkcode AddressPolicy.check}. */
export type AddressCheck =
  | { readonly allowed: true }
  | { readonly allowed: false; readonly reason: string };

/** Decides which IP addresses the delivery client may connect to. */
export interface AddressPolicy {
  /**
   * Checks one IP address, as a resolver returns it or as it appears in a URL
   * without brackets. Text that is not an IP address is refused.
   * @param address an IPv4 or IPv6 address
   * @returns whether it may be dialled and, when not, why
   */
  check(address: string): AddressCheck;
}

/** What a resolver is asked for: the options of `dns.lookup`. */
export interface HostLookupOptions {
  readonly family?: number | "IPv4" | "IPv6" | undefined;
  readonly hints?: number | undefined;
  /** Every address (an array to the callback), not the first. */
  readonly all?: boolean | undefined;
  readonly order?: "ipv4first" | "ipv6first" | "verbatim" | undefined;
  readonly verbatim?: boolean | undefined;
}

/** An address a resolver gave, with its family (4 or 6). */
export interface HostAddress {
  address: string;
  family: number;
}

/**
 * A resolver with the callback signature of `dns.lookup`, as the `lookup`
 * option of `http.request` and `net.connect` calls it (`LookupFunction` of
 * `node:net`, declared here so that the package's types need no `@types/node`).
 */
export type HostLookup = (
  hostname: string,
  options: HostLookupOptions,
  callback: (error: Error | null, address: string | HostAddress[], family?: number) => void,
) => void;

/** Options of {@linkcode createAddressPolicy}. */
export interface AddressPolicyOptions {
  /**
   * CIDRs (IPv4 or IPv6; a bare address is a single host) opened even when a
   * blocked range holds them, e.g. `["127.0.0.1/32"]` for a test receiver.
   * @default {[]}
   */
  readonly allow?: readonly string[];
}

/** A checked CIDR: an address family, its network address and prefix length. */
interface Cidr {
  readonly family: "ipv4" | "ipv6";
  readonly address: string;
  readonly prefix: number;
}

/** One blocked range, named so a refusal can say which rule it hit. */
interface BlockedRange {
  readonly family: "ipv4" | "ipv6";
  readonly cidr: string;
  readonly label: string;
  readonly list: BlockList;
}

/**
 * Ranges that are not on the public internet, after IANA's special-purpose
 * registries. 255.255.255.255 comes before 240.0.0.0/4 so it gets its own name.
 */
const BLOCKED_RANGES: readonly (readonly [cidr: string, label: string])[] = [
  ["0.0.0.0/8", "this network"],
  ["127.0.0.0/8", "loopback"],
  ["10.0.0.0/8", "private network"],
  ["172.16.0.0/12", "private network"],
  ["192.168.0.0/16", "private network"],
  ["169.254.0.0/16", "link-local (cloud metadata)"],
  ["100.64.0.0/10", "shared address space (CGNAT)"],
  ["192.0.0.0/24", "IETF protocol assignments"],
  ["192.0.2.0/24", "documentation"],
  ["198.18.0.0/15", "benchmarking"],
  ["198.51.100.0/24", "documentation"],
  ["203.0.113.0/24", "documentation"],
  ["224.0.0.0/4", "multicast"],
  ["255.255.255.255/32", "limited broadcast"],
  ["240.0.0.0/4", "reserved"],
  ["::/128", "unspecified"],
  ["::ffff:0:0:0/96", "IPv4-translated (may carry a private IPv4 address)"],
  ["100::/64", "discard-only"],
  ["2001:10::/28", "ORCHID (deprecated)"],
  ["2001:20::/28", "ORCHIDv2"],
  ["fec0::/10", "site-local (deprecated)"],
  ["::1/128", "loopback"],
  ["fc00::/7", "unique local"],
  ["fe80::/10", "link-local"],
  ["ff00::/8", "multicast"],
  ["64:ff9b::/96", "NAT64"],
  ["64:ff9b:1::/48", "local-use NAT64"],
  ["2002::/16", "6to4 (may carry a private IPv4 address)"],
  ["2001::/32", "Teredo (may carry a private IPv4 address)"],
  ["2001:db8::/32", "documentation"],
];

/**
 * Creates the SSRF guard of the delivery client: loopback, private, link-local,
 * CGNAT, multicast, reserved, documentation, unique-local and NAT64 addresses
 * are refused, and so are IPv4-mapped (`::ffff:127.0.0.1`) and IPv4-compatible
 * (`::7f00:1`) IPv6 forms of blocked IPv4 addresses. `allow` wins over the blocks.
 *
 * @example
 * ```ts
 * const policy = createAddressPolicy({ allow: ["127.0.0.1/32"] });
 * policy.check("127.0.0.1"); // { allowed: true }
 * policy.check("10.0.0.1"); // { allowed: false, reason: "private network 10.0.0.0/8" }
 * ```
 *
 * @param options the ranges to open
 * @returns the policy
 * @throws {RelayError} `ERR_RELAY_INVALID_CIDR` when an `allow` entry is not a CIDR or address
 */
export function createAddressPolicy(options: AddressPolicyOptions = {}): AddressPolicy {
  // One list per family: a BlockList matches IPv4 addresses against IPv6 rules
  // through their mapped form, so "::/0" alone would open all of IPv4.
  const allow4 = new BlockList();
  const allow6 = new BlockList();
  for (const entry of options.allow ?? []) {
    const cidr = parseCidr(entry);
    (cidr.family === "ipv4" ? allow4 : allow6).addSubnet(cidr.address, cidr.prefix, cidr.family);
  }
  const blocked: BlockedRange[] = BLOCKED_RANGES.map(([cidr, label]) => {
    const parsed = parseCidr(cidr);
    const list = new BlockList();
    list.addSubnet(parsed.address, parsed.prefix, parsed.family);
    return { family: parsed.family, cidr, label, list };
  });

  function check(address: string): AddressCheck {
    const target = normalizeAddress(address);
    if (target === undefined) {
      return { allowed: false, reason: "not an IP address" };
    }
    const allowList = target.family === "ipv4" ? allow4 : allow6;
    if (allowList.check(target.address, target.family)) return { allowed: true };
    const hit = blocked.find(
      (range) => range.family === target.family && range.list.check(target.address, target.family),
    );
    if (hit === undefined) return { allowed: true };
    const via = target.embedded ? ` via IPv4 ${target.address}` : "";
    return { allowed: false, reason: `${hit.label} ${hit.cidr}${via}` };
  }

  return { check };
}

/**
 * Parses `ALLOW_PRIVATE_TARGETS`: comma-separated CIDRs, IPv4 or IPv6, with
 * optional whitespace around each; a bare address stands for one host. Empty
 * text means no ranges.
 *
 * @param text the setting, e.g. `127.0.0.1/32, ::1, 10.0.0.0/8`
 * @returns the CIDRs, each as `address/prefix`
 * @throws {RelayError} `ERR_RELAY_INVALID_CIDR` naming the first entry that is not a
 * CIDR or address, an empty entry included
 */
export function parseCidrList(text: string): readonly string[] {
  if (text.trim() === "") return [];
  return text.split(",").map((item) => {
    const cidr = parseCidr(item.trim());
    return `${cidr.address}/${cidr.prefix}`;
  });
}

/**
 * Wraps a resolver so that the connection fails when ANY address a name resolves
 * to is refused by the policy: checking only the one dialled would let a name
 * that resolves to a public and a private address through on a later try. Pass
 * it as the `lookup` option of `http.request`, `https.request` or `net.connect`,
 * which call it with the name of the URL's host (never with an IP literal:
 * check those with {@linkcode checkTarget}).
 *
 * @example
 * ```ts
 * const policy = createAddressPolicy({});
 * checkTarget(policy, url);
 * http.request(url, { method: "POST", lookup: guardedLookup(policy) });
 * ```
 *
 * @param policy the addresses that may be dialled
 * @param lookup the resolver, with the callback signature of `dns.lookup`
 * @returns a resolver with the same signature; a refusal reaches its callback as a
 * `RelayError` with code `ERR_RELAY_BLOCKED_ADDRESS`, and resolver errors pass through
 */
export function guardedLookup(
  policy: AddressPolicy,
  lookup: HostLookup = dns.lookup,
): HostLookup {
  return function lookupGuarded(hostname, options, callback) {
    const all = options.all === true;
    // Resolve every address, whatever the caller asked for, so all are checked.
    lookup(hostname, { ...options, all: true }, (error, result, family) => {
      if (error !== null) {
        callback(error, all ? [] : "");
        return;
      }
      const addresses: HostAddress[] = typeof result === "string"
        ? [{ address: result, family: family ?? (isIPv4(result) ? 4 : 6) }]
        : result;
      for (const { address } of addresses) {
        const verdict = policy.check(address);
        if (!verdict.allowed) {
          callback(
            new RelayError(
              "ERR_RELAY_BLOCKED_ADDRESS",
              `Cannot connect to ${hostname}: ${refusal(address, verdict.reason)}`,
            ),
            all ? [] : "",
          );
          return;
        }
      }
      const first = addresses[0];
      if (all) {
        callback(null, addresses);
      } else if (first === undefined) {
        const notFound: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
        notFound.code = "ENOTFOUND";
        callback(notFound, "");
      } else {
        callback(null, first.address, first.family);
      }
    });
  };
}

/**
 * Checks a URL whose host is an IP literal before a request is made: Node's
 * `http` connects to such hosts without calling `lookup`, so
 * {@linkcode guardedLookup} never sees them. Host names pass, for the lookup to check.
 *
 * @param policy the addresses that may be dialled
 * @param url the target; IPv6 hosts come bracketed, as `URL` gives them
 * @throws {RelayError} `ERR_RELAY_BLOCKED_ADDRESS` when the host is an IP address the
 * policy refuses, saying how `ALLOW_PRIVATE_TARGETS` would open it
 */
export function checkTarget(policy: AddressPolicy, url: URL): void {
  const refused = targetRefusal(policy, url);
  if (refused !== undefined) {
    throw new RelayError("ERR_RELAY_BLOCKED_ADDRESS", `Cannot connect to ${url.host}: ${refused}`);
  }
}

/**
 * Why the policy refuses a URL whose host is an IP literal, and how to open
 * it: `address 127.0.0.1 is refused (loopback 127.0.0.0/8); to deliver
 * there, add 127.0.0.1/32 to ALLOW_PRIVATE_TARGETS`.
 * @param policy the addresses that may be dialled
 * @param url the target
 * @returns the reason, or undefined when the host is a name or an address the policy allows
 */
export function targetRefusal(policy: AddressPolicy, url: URL): string | undefined {
  const host = url.hostname.startsWith("[") && url.hostname.endsWith("]")
    ? url.hostname.slice(1, -1)
    : url.hostname;
  if (!isIPv4(host) && !isIPv6(host)) return undefined;
  const verdict = policy.check(host);
  return verdict.allowed ? undefined : refusal(host, verdict.reason);
}

/** That an address is refused and why, and the one-host range of `ALLOW_PRIVATE_TARGETS` that would allow it. */
function refusal(address: string, reason: string): string {
  const target = normalizeAddress(address);
  const opening = target === undefined
    ? ""
    : `; to deliver there, add ${target.address}/${
      target.family === "ipv4" ? 32 : 128
    } to ALLOW_PRIVATE_TARGETS`;
  return `address ${address} is refused (${reason})${opening}`;
}

/** An address ready for a BlockList, with whether it came out of an IPv6 form. */
interface Target {
  readonly family: "ipv4" | "ipv6";
  readonly address: string;
  readonly embedded: boolean;
}

/**
 * Validates an address and reduces IPv4-mapped and IPv4-compatible IPv6
 * addresses to their IPv4 address; a BlockList would not see through the
 * compatible form, and it would silently answer `false` for invalid text.
 */
function normalizeAddress(text: string): Target | undefined {
  if (isIPv4(text)) return { family: "ipv4", address: text, embedded: false };
  // A zone (fe80::1%eth0) says which interface, not which address.
  const address = text.includes("%") ? text.slice(0, text.indexOf("%")) : text;
  if (!isIPv6(address)) return undefined;
  const words = ipv6Words(address);
  const embedded = embeddedIPv4(words);
  if (embedded !== undefined) return { family: "ipv4", address: embedded, embedded: true };
  return { family: "ipv6", address, embedded: false };
}

/** The IPv4 address in `::ffff:a.b.c.d` or `::a.b.c.d` (except `::` and `::1`). */
function embeddedIPv4(words: readonly number[]): string | undefined {
  if (words.slice(0, 5).some((word) => word !== 0)) return undefined;
  const marker = words[5] ?? 0;
  const high = words[6] ?? 0;
  const low = words[7] ?? 0;
  const compatible = marker === 0 && (high !== 0 || low > 1);
  if (marker !== 0xffff && !compatible) return undefined;
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join(".");
}

/** The eight 16-bit words of an IPv6 address that `isIPv6` accepted. */
function ipv6Words(address: string): number[] {
  const groups = (part: string): number[] => {
    if (part === "") return [];
    return part.split(":").flatMap((group) => {
      if (!group.includes(".")) return [Number.parseInt(group, 16)];
      const [a = 0, b = 0, c = 0, d = 0] = group.split(".").map(Number);
      return [(a << 8) | b, (c << 8) | d];
    });
  };
  const gap = address.indexOf("::");
  if (gap === -1) return groups(address);
  const head = groups(address.slice(0, gap));
  const tail = groups(address.slice(gap + 2));
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** Parses `address/prefix` or a bare address into a CIDR, or throws naming it. */
function parseCidr(entry: string): Cidr {
  const slash = entry.indexOf("/");
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const prefixText = slash === -1 ? undefined : entry.slice(slash + 1);
  const family = isIPv4(address) ? "ipv4" : isIPv6(address) ? "ipv6" : undefined;
  const max = family === "ipv4" ? 32 : 128;
  const prefix = prefixText === undefined
    ? max
    : /^\d{1,3}$/.test(prefixText)
    ? Number(prefixText)
    : NaN;
  if (family === undefined || !(prefix <= max)) {
    const what = entry === "" ? "an empty entry" : `"${entry}"`;
    throw new RelayError(
      "ERR_RELAY_INVALID_CIDR",
      `Cannot parse the address range ${what}: expected an IPv4 or IPv6 address, optionally ` +
        "with a prefix length (/0 to /32 for IPv4, /0 to /128 for IPv6), e.g. 127.0.0.1/32",
    );
  }
  if (family === "ipv6") {
    // Addresses are checked as IPv4 once unmapped, so an IPv4-mapped range must be too.
    const embedded = prefix >= 96 ? mappedIPv4(address) : undefined;
    if (embedded !== undefined) return { family: "ipv4", address: embedded, prefix: prefix - 96 };
  }
  return { family, address, prefix };
}

/** The IPv4 address of an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`). */
function mappedIPv4(address: string): string | undefined {
  const words = ipv6Words(address);
  if (words[5] !== 0xffff) return undefined;
  return embeddedIPv4(words);
}

import assert from "node:assert/strict";
import type { LookupAddress, LookupOptions } from "node:dns";
import * as http from "node:http";
import type { LookupFunction } from "node:net";
import { after, before, describe, it } from "node:test";
import {
  type AddressPolicy,
  checkTarget,
  createAddressPolicy,
  guardedLookup,
  parseCidrList,
} from "../../lib/relay/address_policy.ts";
import { RelayError } from "../../lib/relay/errors.ts";

// Addresses below are only ever passed to check() or to a fake resolver as
// strings: the one real connection goes to a server on 127.0.0.1.

const BLOCKED = [
  { range: "0.0.0.0/8", samples: ["0.0.0.0", "0.255.255.255"] },
  { range: "127.0.0.0/8", samples: ["127.0.0.1", "127.255.255.254"] },
  { range: "10.0.0.0/8", samples: ["10.0.0.1", "10.255.255.255"] },
  { range: "172.16.0.0/12", samples: ["172.16.0.1", "172.31.255.255"] },
  { range: "192.168.0.0/16", samples: ["192.168.0.1", "192.168.255.255"] },
  { range: "169.254.0.0/16", samples: ["169.254.169.254", "169.254.0.1"] },
  { range: "100.64.0.0/10", samples: ["100.64.0.1", "100.127.255.255"] },
  { range: "192.0.0.0/24", samples: ["192.0.0.8", "192.0.0.255"] },
  { range: "192.0.2.0/24", samples: ["192.0.2.1"] },
  { range: "198.18.0.0/15", samples: ["198.18.0.1", "198.19.255.255"] },
  { range: "198.51.100.0/24", samples: ["198.51.100.7"] },
  { range: "203.0.113.0/24", samples: ["203.0.113.99"] },
  { range: "224.0.0.0/4", samples: ["224.0.0.1", "239.255.255.250"] },
  { range: "240.0.0.0/4", samples: ["240.0.0.1", "254.1.2.3"] },
  { range: "255.255.255.255/32", samples: ["255.255.255.255"] },
  { range: "::/128", samples: ["::", "0:0:0:0:0:0:0:0"] },
  { range: "::1/128", samples: ["::1", "0:0:0:0:0:0:0:1"] },
  { range: "fc00::/7", samples: ["fc00::1", "fd12:3456:789a::1"] },
  { range: "fe80::/10", samples: ["fe80::1", "febf::1", "fe80::1%eth0"] },
  { range: "ff00::/8", samples: ["ff02::1", "ff05::1:3"] },
  { range: "64:ff9b::/96", samples: ["64:ff9b::7f00:1", "64:ff9b::808:808"] },
  { range: "2001:db8::/32", samples: ["2001:db8::1", "2001:db8:ffff::1"] },
  { range: "64:ff9b:1::/48", samples: ["64:ff9b:1::a00:1"] },
  { range: "2002::/16", samples: ["2002:a00:1::1", "2002:c0a8:101::1"] },
  { range: "2001::/32", samples: ["2001:0:4136:e378::1"] },
  {
    range: "::ffff:0:0:0/96",
    samples: ["::ffff:0:7f00:1", "::ffff:0:a00:1", "0:0:0:0:ffff:0:808:808"],
  },
  { range: "100::/64", samples: ["100::1", "100::ffff:ffff:ffff:ffff"] },
  { range: "2001:10::/28", samples: ["2001:10::1", "2001:1f:ffff::1"] },
  { range: "2001:20::/28", samples: ["2001:20::1", "2001:2f::1"] },
  { range: "fec0::/10", samples: ["fec0::1", "feff::1"] },
] as const;

const EMBEDDED = [
  { name: "IPv4-mapped dotted", address: "::ffff:127.0.0.1", range: "127.0.0.0/8" },
  { name: "IPv4-mapped hex", address: "::ffff:7f00:1", range: "127.0.0.0/8" },
  { name: "IPv4-mapped, full form", address: "0:0:0:0:0:ffff:a9fe:a9fe", range: "169.254.0.0/16" },
  { name: "IPv4-mapped upper case", address: "::FFFF:10.0.0.1", range: "10.0.0.0/8" },
  { name: "IPv4-compatible dotted", address: "::127.0.0.1", range: "127.0.0.0/8" },
  { name: "IPv4-compatible hex", address: "::7f00:1", range: "127.0.0.0/8" },
  { name: "IPv4-compatible private", address: "::c0a8:101", range: "192.168.0.0/16" },
] as const;

const PUBLIC = [
  "8.8.8.8",
  "1.1.1.1",
  "9.9.9.9",
  "172.15.255.255",
  "172.32.0.0",
  "100.63.255.255",
  "100.128.0.0",
  "198.17.255.255",
  "198.20.0.0",
  "223.255.255.255",
  "11.0.0.0",
  "2606:4700::1111",
  "2001:4860:4860::8888",
  "2001:db9::1",
  "100:0:0:1::1",
  "2001:30::1",
  "::ffff:8.8.8.8",
  "::808:808",
] as const;

const NOT_ADDRESSES = [
  "",
  "localhost",
  "example.com",
  "1.2.3",
  "256.0.0.1",
  "1::2::3",
  "[::1]",
] as const;

describe("createAddressPolicy()", () => {
  const policy = createAddressPolicy({});

  for (const c of BLOCKED) {
    for (const address of c.samples) {
      it(`blocks ${address} in ${c.range}`, () => {
        const verdict = policy.check(address);
        assert.equal(verdict.allowed, false);
        assert.ok(!verdict.allowed && verdict.reason.includes(c.range), JSON.stringify(verdict));
      });
    }
  }

  for (const c of EMBEDDED) {
    it(`blocks the ${c.name} form ${c.address} as its IPv4 address`, () => {
      const verdict = policy.check(c.address);
      assert.ok(!verdict.allowed && verdict.reason.includes(c.range), JSON.stringify(verdict));
    });
  }

  for (const address of PUBLIC) {
    it(`allows the public address ${address}`, () => {
      assert.deepEqual(policy.check(address), { allowed: true });
    });
  }

  for (const text of NOT_ADDRESSES) {
    it(`refuses ${JSON.stringify(text)}, which is not an IP address`, () => {
      assert.deepEqual(policy.check(text), { allowed: false, reason: "not an IP address" });
    });
  }

  it("works without options", () => {
    assert.equal(createAddressPolicy().check("127.0.0.1").allowed, false);
  });

  const allowCases = [
    { name: "opens one IPv4 host", allow: ["127.0.0.1/32"], address: "127.0.0.1", allowed: true },
    {
      name: "keeps its neighbour blocked",
      allow: ["127.0.0.1/32"],
      address: "127.0.0.2",
      allowed: false,
    },
    {
      name: "opens the mapped form of an IPv4 host",
      allow: ["127.0.0.1/32"],
      address: "::ffff:127.0.0.1",
      allowed: true,
    },
    {
      name: "reads a bare IPv4 address as /32",
      allow: ["127.0.0.1"],
      address: "127.0.0.2",
      allowed: false,
    },
    { name: "opens one IPv6 host", allow: ["::1/128"], address: "::1", allowed: true },
    { name: "reads a bare IPv6 address as /128", allow: ["::1"], address: "::1", allowed: true },
    { name: "opens an IPv4 range", allow: ["10.0.0.0/8"], address: "10.20.30.40", allowed: true },
    {
      name: "keeps other ranges blocked",
      allow: ["10.0.0.0/8"],
      address: "192.168.1.1",
      allowed: false,
    },
    { name: "opens an IPv6 range", allow: ["fd00::/8"], address: "fd12::1", allowed: true },
    {
      name: "accepts host bits in a range",
      allow: ["10.1.2.3/8"],
      address: "10.9.9.9",
      allowed: true,
    },
    {
      name: "reads a mapped range as IPv4",
      allow: ["::ffff:127.0.0.0/104"],
      address: "127.0.0.9",
      allowed: true,
    },
    {
      name: "does not open IPv4 through an IPv6 range",
      allow: ["::/0"],
      address: "127.0.0.1",
      allowed: false,
    },
    { name: "does open IPv6 through ::/0", allow: ["::/0"], address: "fe80::1", allowed: true },
    {
      name: "never opens text that is not an address",
      allow: ["0.0.0.0/0", "::/0"],
      address: "nope",
      allowed: false,
    },
  ] as const;
  for (const c of allowCases) {
    it(`allow ${c.name}`, () => {
      assert.equal(createAddressPolicy({ allow: c.allow }).check(c.address).allowed, c.allowed);
    });
  }

  it("refuses an invalid allow entry", () => {
    assert.throws(() => createAddressPolicy({ allow: ["127.0.0.1/33"] }), {
      name: "RelayError",
      code: "ERR_RELAY_INVALID_CIDR",
    });
  });
});

describe("parseCidrList()", () => {
  const cases = [
    { name: "reads nothing from empty text", input: "", expected: [] },
    { name: "reads nothing from blank text", input: "  ", expected: [] },
    {
      name: "reads IPv4 and IPv6 CIDRs",
      input: "127.0.0.1/32,::1/128",
      expected: ["127.0.0.1/32", "::1/128"],
    },
    {
      name: "gives bare addresses a full prefix",
      input: "127.0.0.1, ::1",
      expected: ["127.0.0.1/32", "::1/128"],
    },
    {
      name: "allows whitespace around entries",
      input: " 10.0.0.0/8 ,\tfd00::/8 ",
      expected: ["10.0.0.0/8", "fd00::/8"],
    },
    { name: "accepts /0", input: "0.0.0.0/0", expected: ["0.0.0.0/0"] },
    {
      name: "reads a mapped range as IPv4",
      input: "::ffff:10.0.0.0/104",
      expected: ["10.0.0.0/8"],
    },
  ] as const;
  for (const c of cases) it(c.name, () => assert.deepEqual(parseCidrList(c.input), c.expected));

  const invalid = [
    { name: "an empty entry", input: "127.0.0.1/32,,::1", entry: "an empty entry" },
    { name: "a trailing comma", input: "127.0.0.1/32,", entry: "an empty entry" },
    { name: "a host name", input: "localhost", entry: '"localhost"' },
    { name: "an IPv4 prefix above 32", input: "10.0.0.0/33", entry: '"10.0.0.0/33"' },
    { name: "an IPv6 prefix above 128", input: "::1/129", entry: '"::1/129"' },
    { name: "a negative prefix", input: "10.0.0.0/-1", entry: '"10.0.0.0/-1"' },
    { name: "an empty prefix", input: "10.0.0.0/", entry: '"10.0.0.0/"' },
    { name: "a fractional prefix", input: "10.0.0.0/8.5", entry: '"10.0.0.0/8.5"' },
    { name: "a bad address", input: "10.0.0.256/32", entry: '"10.0.0.256/32"' },
    { name: "brackets", input: "[::1]/128", entry: '"[::1]/128"' },
    { name: "a short IPv4 address", input: "127.1", entry: '"127.1"' },
  ] as const;
  for (const c of invalid) {
    it(`refuses ${c.name}, naming it`, () => {
      assert.throws(() => parseCidrList(c.input), (error: unknown) => {
        assert.ok(error instanceof RelayError);
        assert.equal(error.code, "ERR_RELAY_INVALID_CIDR");
        assert.ok(error.message.includes(c.entry), error.message);
        return true;
      });
    });
  }
});

/** What a guarded lookup handed to its callback. */
interface Outcome {
  readonly error: (Error & { code?: unknown }) | null;
  readonly address: string | readonly LookupAddress[];
  readonly family: number | undefined;
}

/** A resolver that answers every name with the given addresses, recording what it was asked. */
function fakeLookup(answer: readonly LookupAddress[], calls: LookupOptions[] = []): LookupFunction {
  return (_hostname, options, callback) => {
    calls.push(options);
    if (options.all === true) callback(null, [...answer]);
    else if (answer[0] === undefined) callback(null, "");
    else callback(null, answer[0].address, answer[0].family);
  };
}

/** Runs a guarded lookup and collects what reaches its callback. */
function resolve(
  policy: AddressPolicy,
  lookup: LookupFunction,
  options: LookupOptions,
): Promise<Outcome> {
  return new Promise((done) => {
    guardedLookup(policy, lookup)("receiver.test", options, (error, address, family) => {
      done({ error, address, family });
    });
  });
}

const v4 = (address: string): LookupAddress => ({ address, family: 4 });
const v6 = (address: string): LookupAddress => ({ address, family: 6 });

describe("guardedLookup()", () => {
  const policy = createAddressPolicy({});

  const cases = [
    { name: "a private address", answer: [v4("10.0.0.5")], blocked: "10.0.0.5" },
    { name: "a loopback pair", answer: [v6("::1"), v4("127.0.0.1")], blocked: "::1" },
    {
      name: "a public address followed by a private one",
      answer: [v4("8.8.8.8"), v4("192.168.1.1")],
      blocked: "192.168.1.1",
    },
    {
      name: "a public IPv6 address and a mapped private one",
      answer: [v6("2606:4700::1111"), v6("::ffff:a9fe:a9fe")],
      blocked: "::ffff:a9fe:a9fe",
    },
  ] as const;
  for (const c of cases) {
    for (const all of [true, false]) {
      it(`refuses ${c.name} (all: ${all})`, async () => {
        const outcome = await resolve(policy, fakeLookup(c.answer), { all });
        assert.equal(outcome.error?.name, "RelayError");
        assert.equal(outcome.error?.code, "ERR_RELAY_BLOCKED_ADDRESS");
        assert.ok(outcome.error?.message.includes(c.blocked), outcome.error?.message);
        assert.ok(outcome.error?.message.includes("receiver.test"), outcome.error?.message);
        assert.match(
          outcome.error?.message ?? "",
          /; to deliver there, add \S+\/(32|128) to ALLOW_PRIVATE_TARGETS$/,
        );
        assert.deepEqual(outcome.address, all ? [] : "");
      });
    }
  }

  it("returns every address when asked for all", async () => {
    const answer = [v4("8.8.8.8"), v6("2606:4700::1111")];
    const outcome = await resolve(policy, fakeLookup(answer), { all: true });
    assert.equal(outcome.error, null);
    assert.deepEqual(outcome.address, answer);
  });

  it("returns the first address and its family otherwise", async () => {
    const answer = [v6("2606:4700::1111"), v4("1.1.1.1")];
    const outcome = await resolve(policy, fakeLookup(answer), { family: 0 });
    assert.deepEqual(outcome, { error: null, address: "2606:4700::1111", family: 6 });
  });

  it("asks the resolver for every address, keeping the caller's options", async () => {
    const calls: LookupOptions[] = [];
    await resolve(policy, fakeLookup([v4("1.1.1.1")], calls), { family: 4, hints: 32 });
    assert.deepEqual(calls, [{ family: 4, hints: 32, all: true }]);
  });

  it("handles a resolver that returns a single address", async () => {
    const single: LookupFunction = (_hostname, _options, callback) => {
      callback(null, "127.0.0.1", 4);
    };
    const blocked = await resolve(policy, single, { all: true });
    assert.equal(blocked.error?.code, "ERR_RELAY_BLOCKED_ADDRESS");
    const open = createAddressPolicy({ allow: ["127.0.0.1"] });
    assert.deepEqual(await resolve(open, single, { all: true }), {
      error: null,
      address: [{ address: "127.0.0.1", family: 4 }],
      family: undefined,
    });
  });

  it("opens what the allow list opens", async () => {
    const open = createAddressPolicy({ allow: ["10.0.0.0/8"] });
    const outcome = await resolve(open, fakeLookup([v4("10.1.1.1")]), {});
    assert.deepEqual(outcome, { error: null, address: "10.1.1.1", family: 4 });
  });

  it("passes a resolver error through", async () => {
    const failing: LookupFunction = (_hostname, _options, callback) => {
      const error: NodeJS.ErrnoException = new Error("getaddrinfo ENOTFOUND receiver.test");
      error.code = "ENOTFOUND";
      callback(error, "");
    };
    const outcome = await resolve(policy, failing, {});
    assert.equal(outcome.error?.code, "ENOTFOUND");
  });

  it("reports a name without addresses as not found", async () => {
    const outcome = await resolve(policy, fakeLookup([]), {});
    assert.equal(outcome.error?.code, "ENOTFOUND");
    assert.deepEqual((await resolve(policy, fakeLookup([]), { all: true })).address, []);
  });
});

describe("guardedLookup() with node:http", () => {
  let server: http.Server;
  let port = 0;

  before(async () => {
    server = http.createServer((_req, res) => res.end("ok"));
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    const address = server.address();
    assert.ok(address !== null && typeof address === "object");
    port = address.port;
  });

  after(async () => {
    await new Promise((done) => server.close(done));
  });

  /** GETs `http://localhost:<port>/` through the guard; the status, or the error's code. */
  function get(policy: AddressPolicy): Promise<number | unknown> {
    return new Promise((done) => {
      const request = http.request(
        `http://localhost:${port}/`,
        { lookup: guardedLookup(policy), agent: false },
        (response) => {
          response.resume();
          response.on("end", () => done(response.statusCode));
        },
      );
      request.on("error", (error: Error & { code?: unknown }) => done(error.code));
      request.end();
    });
  }

  it("refuses a connection to localhost by default", async () => {
    assert.equal(await get(createAddressPolicy({})), "ERR_RELAY_BLOCKED_ADDRESS");
  });

  it("connects when loopback is allowed", async () => {
    assert.equal(await get(createAddressPolicy({ allow: ["127.0.0.1/32", "::1/128"] })), 200);
  });
});

describe("checkTarget()", () => {
  const policy = createAddressPolicy({});
  const cases = [
    { name: "a loopback IPv4 literal", url: "http://127.0.0.1:8080/hook", blocked: true },
    { name: "a shortened IPv4 literal", url: "http://127.1/", blocked: true },
    { name: "a decimal IPv4 literal", url: "http://2130706433/", blocked: true },
    { name: "a hex IPv4 literal", url: "http://0x7f.0.0.1/", blocked: true },
    { name: "a metadata address", url: "http://169.254.169.254/latest/meta-data/", blocked: true },
    { name: "a bracketed IPv6 loopback", url: "http://[::1]:3000/", blocked: true },
    { name: "a bracketed mapped address", url: "https://[::ffff:127.0.0.1]/", blocked: true },
    { name: "a bracketed link-local address", url: "http://[fe80::1]/", blocked: true },
    { name: "a public IPv4 literal", url: "https://8.8.8.8/", blocked: false },
    { name: "a public IPv6 literal", url: "https://[2606:4700::1111]/", blocked: false },
    { name: "a host name, left to the lookup", url: "http://localhost:3000/", blocked: false },
    { name: "a domain, left to the lookup", url: "https://example.com/hook", blocked: false },
  ] as const;
  for (const c of cases) {
    it(`${c.blocked ? "refuses" : "passes"} ${c.name}`, () => {
      const url = new URL(c.url);
      if (c.blocked) {
        assert.throws(() => checkTarget(policy, url), {
          name: "RelayError",
          code: "ERR_RELAY_BLOCKED_ADDRESS",
        });
      } else {
        assert.doesNotThrow(() => checkTarget(policy, url));
      }
    });
  }

  const openings = [
    {
      url: "http://127.0.0.1:9000/hook",
      message:
        "Cannot connect to 127.0.0.1:9000: address 127.0.0.1 is refused (loopback 127.0.0.0/8); to deliver there, add 127.0.0.1/32 to ALLOW_PRIVATE_TARGETS",
    },
    {
      url: "http://[::1]:3000/",
      message:
        "Cannot connect to [::1]:3000: address ::1 is refused (loopback ::1/128); to deliver there, add ::1/128 to ALLOW_PRIVATE_TARGETS",
    },
    {
      url: "https://[::ffff:127.0.0.1]/",
      message:
        "Cannot connect to [::ffff:7f00:1]: address ::ffff:7f00:1 is refused (loopback 127.0.0.0/8 via IPv4 127.0.0.1); to deliver there, add 127.0.0.1/32 to ALLOW_PRIVATE_TARGETS",
    },
  ] as const;
  for (const c of openings) {
    it(`says how ALLOW_PRIVATE_TARGETS would open ${c.url}`, () => {
      assert.throws(() => checkTarget(policy, new URL(c.url)), {
        code: "ERR_RELAY_BLOCKED_ADDRESS",
        message: c.message,
      });
    });
  }

  it("passes a literal the allow list opens", () => {
    const open = createAddressPolicy({ allow: ["127.0.0.1/32", "::1/128"] });
    assert.doesNotThrow(() => checkTarget(open, new URL("http://127.0.0.1:9000/")));
    assert.doesNotThrow(() => checkTarget(open, new URL("http://[::1]:9000/")));
    assert.throws(() => checkTarget(open, new URL("http://127.0.0.2:9000/")), {
      code: "ERR_RELAY_BLOCKED_ADDRESS",
    });
  });
});

import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, it } from "node:test";
import { createNodeListener } from "../../lib/http/mod.ts";
import { parseTrustedProxies, readForwarded } from "../../lib/http/trusted_proxies.ts";
import { requestFrom } from "../_helpers/http.ts";

const PROXIES = parseTrustedProxies("10.0.0.0/8, 127.0.0.2");

describe("readForwarded()", () => {
  const cases = [
    {
      name: "ignores every header from a peer that is not a trusted proxy",
      peer: "203.0.113.9",
      headers: {
        "x-forwarded-for": "198.51.100.1",
        "x-forwarded-proto": "https",
        "x-forwarded-host": "evil.example",
        forwarded: "for=1.2.3.4;proto=https",
      },
      expected: { client: "203.0.113.9", proto: undefined, host: undefined },
    },
    {
      name:
        "takes X-Forwarded-* from a trusted proxy: the last proto and host, the nearest untrusted address",
      peer: "10.0.0.5",
      headers: {
        "x-forwarded-for": "198.51.100.77, 203.0.113.9, 10.0.0.4",
        "x-forwarded-proto": "http, https",
        "x-forwarded-host": "api.example.org",
      },
      expected: { client: "203.0.113.9", proto: "https", host: "api.example.org" },
    },
    {
      name:
        "ignores a Forwarded header a client sent through X-Forwarded-* proxies (they pass it on untouched)",
      peer: "10.0.0.5",
      headers: {
        forwarded: "for=198.51.100.2;proto=https;host=evil.example",
        "x-forwarded-for": "203.0.113.1",
      },
      expected: { client: "203.0.113.1", proto: undefined, host: undefined },
    },
    {
      name: "keeps the peer when there is no header",
      peer: "10.0.0.5",
      headers: { "x-forwarded-host": "a.example/b" },
      expected: { client: "10.0.0.5", proto: undefined, host: undefined },
    },
  ] as const;
  for (const c of cases) {
    it(c.name, () => assert.deepEqual(readForwarded(c.peer, c.headers, PROXIES), c.expected));
  }

  const rfc = [
    {
      name: "reads RFC 7239 Forwarded, quoted IPv6 and ports, walking back over trusted hops",
      headers: {
        forwarded:
          'for="[2001:db8::7]:4711";proto=https;host=water.example.org, for=10.0.0.4;proto=http',
      },
      expected: { client: "2001:db8::7", proto: "https", host: "water.example.org" },
    },
    {
      name: "ignores X-Forwarded-* behind RFC 7239 proxies",
      headers: {
        forwarded: "for=198.51.100.2;proto=https",
        "x-forwarded-for": "203.0.113.1",
        "x-forwarded-host": "evil.example",
      },
      expected: { client: "198.51.100.2", proto: "https", host: undefined },
    },
    {
      name: "ignores malformed values (a proto that is not http(s), an obfuscated for)",
      headers: { forwarded: "for=_hidden;proto=ftp" },
      expected: { client: "10.0.0.5", proto: undefined, host: undefined },
    },
  ] as const;
  for (const c of rfc) {
    it(
      c.name,
      () =>
        assert.deepEqual(readForwarded("10.0.0.5", c.headers, PROXIES, "forwarded"), c.expected),
    );
  }

  it("refuses a list with anything but CIDRs", () => {
    assert.throws(() => parseTrustedProxies("10.0.0.0/8, nope"), /"nope" is not a CIDR/);
  });
});

describe("createNodeListener() with trustedProxies", () => {
  it("gives the client's scheme, host and address behind a trusted proxy, and the raw peer's otherwise", async () => {
    const server = createServer(
      createNodeListener(
        (req) => ({
          status: 200,
          body: JSON.stringify({ origin: req.origin, address: req.remoteAddress }),
        }),
        { trustedProxies: PROXIES },
      ),
    );
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const port = (server.address() as AddressInfo).port;
    const headers = {
      "x-forwarded-proto": "https",
      "x-forwarded-host": "api.example.org",
      "x-forwarded-for": "198.51.100.20",
    };
    const ask = async (from: string) =>
      JSON.parse((await requestFrom(`http://127.0.0.1:${port}`, "/", { headers, from })).text) as {
        origin: string;
        address: string;
      };
    try {
      assert.deepEqual(await ask("127.0.0.2"), {
        origin: "https://api.example.org",
        address: "198.51.100.20",
      });
      assert.deepEqual(await ask("127.0.0.3"), {
        origin: `http://127.0.0.1:${port}`,
        address: "127.0.0.3",
      });
    } finally {
      server.close();
    }
  });
});

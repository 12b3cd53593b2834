import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { buildNextLink, type NextLinkOptions } from "../../lib/odata/mod.ts";
import { encodeQueryValue } from "../../lib/odata/next_link.ts";
import { createPrng } from "../_helpers/prng.ts";

const BASE: NextLinkOptions = {
  origin: "https://api.example.org",
  path: "/v1/odata/v4/Observations",
  top: 1000,
  lastId: 99_999,
};

/** The decoded query parameters of a link, as a client reads them. */
function paramsOf(link: string): URLSearchParams {
  return new URL(link).searchParams;
}

describe("buildNextLink()", () => {
  it("gives the origin, the path, $top and the $skiptoken", () => {
    assert.equal(
      buildNextLink(BASE),
      "https://api.example.org/v1/odata/v4/Observations?$top=1000&$skiptoken=Id:99999",
    );
  });

  it("keeps $filter, $select, $top and $format", () => {
    const link = buildNextLink({
      ...BASE,
      filter: "CharacteristicName eq 'pH'",
      select: ["Id", "ResultValue"],
      top: 100,
      format: "csv",
      lastId: 42,
    });
    assert.equal(
      link,
      "https://api.example.org/v1/odata/v4/Observations?$filter=CharacteristicName%20eq%20'pH'" +
        "&$select=Id,ResultValue&$top=100&$format=csv&$skiptoken=Id:42",
    );
  });

  it("keeps the origin's port and a local host", () => {
    const link = buildNextLink({ ...BASE, origin: "http://127.0.0.1:8080" });
    assert.equal(new URL(link).origin, "http://127.0.0.1:8080");
    assert.equal(new URL(link).pathname, "/v1/odata/v4/Observations");
  });

  it("writes a UUID last id", () => {
    const link = buildNextLink({
      ...BASE,
      path: "/v1/odata/v4/Metadata",
      lastId: "000000ab-000a-00a0-0aba-0ab00abc0a0a",
    });
    assert.ok(
      link.endsWith(
        "/v1/odata/v4/Metadata?$top=1000&$skiptoken=Id:000000ab-000a-00a0-0aba-0ab00abc0a0a",
      ),
    );
  });

  it("encodes spaces as %20, never as a raw space or '+'", () => {
    const link = buildNextLink({
      ...BASE,
      filter: "A eq 'x y' and B eq 'a+b'",
      select: ["Id", " DOI"],
    });
    assert.ok(!link.includes(" "));
    assert.ok(!link.includes("+"));
    assert.match(link, /A%20eq%20'x%20y'%20and%20B%20eq%20'a%2Bb'/);
  });

  const encoded = [
    { char: "&", as: "%26" },
    { char: "#", as: "%23" },
    { char: "%", as: "%25" },
    { char: "+", as: "%2B" },
    { char: "=", as: "%3D" },
    { char: "?", as: "%3F" },
    { char: " ", as: "%20" },
    { char: '"', as: "%22" },
    { char: "é", as: "%C3%A9" },
    { char: "🌊", as: "%F0%9F%8C%8A" },
  ] as const;
  for (const c of encoded) {
    it(`encodes ${JSON.stringify(c.char)} as ${c.as}`, () => {
      const link = buildNextLink({ ...BASE, filter: `Name eq '${c.char}'` });
      assert.ok(link.includes(`$filter=Name%20eq%20'${c.as}'&`), link);
    });
  }

  for (const char of ["$", ":", ",", "'", "(", ")"]) {
    it(`keeps ${JSON.stringify(char)} readable`, () => {
      const link = buildNextLink({ ...BASE, filter: `Name eq '${char}'` });
      assert.ok(link.includes(`$filter=Name%20eq%20'${char}'&`), link);
    });
  }

  it("keeps an 'in' list readable", () => {
    const link = buildNextLink({
      ...BASE,
      filter: "CharacteristicName in ('Temperature, water','pH')",
    });
    assert.ok(link.includes("$filter=CharacteristicName%20in%20('Temperature,%20water','pH')"));
  });

  const tricky = [
    "CharacteristicName eq '2,2''-Dichlorobiphenyl'",
    "DOI eq '10.25976/a+b' or DOI eq '10.25976/c&d=e'",
    "Name eq '100%' and contains(Name, '%20')",
    "Name eq 'Rivière Rouge 🌊' or Name eq 'naïve #1'",
    "Name eq 'a?b' and Name ne '/slash\\back'",
    "Name eq '  two  spaces  ' or Name eq '\t'",
    "Name eq '%2B%26+'",
  ];
  for (const filter of tricky) {
    it(`gives back the exact filter ${JSON.stringify(filter)} when decoded`, () => {
      const params = paramsOf(
        buildNextLink({ ...BASE, filter, select: ["Id", "Name"], format: "json" }),
      );
      assert.equal(params.get("$filter"), filter);
      assert.equal(params.get("$select"), "Id,Name");
      assert.equal(params.get("$top"), "1000");
      assert.equal(params.get("$format"), "json");
      assert.equal(params.get("$skiptoken"), "Id:99999");
    });
  }

  it("round-trips random filters through URLSearchParams", (t) => {
    const seed = 0x11a7c001;
    t.diagnostic(`seed ${seed}`);
    const prng = createPrng(seed);
    const alphabet = [..."aZ09 '()$:,&#%+=?/\\\"é🌊\t~*!@;", "eq", " and "];
    for (let i = 0; i < 2000; i++) {
      let filter = "";
      for (let k = prng.int(40); k > 0; k--) filter += prng.pick(alphabet);
      const link = buildNextLink({ ...BASE, filter });
      assert.ok(!link.includes(" ") && !link.includes("+"), `seed ${seed}: ${link}`);
      assert.equal(paramsOf(link).get("$filter"), filter, `seed ${seed}: ${link}`);
    }
  });

  it("has no '$select' or '$format' when the request had none", () => {
    const params = paramsOf(buildNextLink(BASE));
    assert.equal(params.has("$select"), false);
    assert.equal(params.has("$format"), false);
    assert.equal(params.has("$filter"), false);
  });
});

describe("encodeQueryValue()", () => {
  it("keeps unreserved and filter characters", () => {
    assert.equal(encodeQueryValue("Az09-._~'()*!:,$/@"), "Az09-._~'()*!:,$/@");
  });

  it("encodes the rest by UTF-8 bytes", () => {
    assert.equal(encodeQueryValue("a b&c=d+e#f%g"), "a%20b%26c%3Dd%2Be%23f%25g");
  });
});

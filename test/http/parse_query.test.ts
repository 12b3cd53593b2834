import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeComponent, parseQuery } from "../../lib/http/parse_query.ts";

describe("parseQuery()", () => {
  const cases = [
    { name: "returns no parameters for an empty query", input: "", expected: [] },
    { name: "decodes '+' to a space", input: "a=b+c", expected: [{ name: "a", value: "b c" }] },
    { name: "decodes '%20' to a space", input: "a=b%20c", expected: [{ name: "a", value: "b c" }] },
    {
      name: "decodes '%24top' to '$top'",
      input: "%24top=10",
      expected: [{ name: "$top", value: "10" }],
    },
    {
      name: "keeps a literal '$' in a name",
      input: "$top=10",
      expected: [{ name: "$top", value: "10" }],
    },
    {
      name: "decodes '%2B' to a plus sign",
      input: "a=1%2B2",
      expected: [{ name: "a", value: "1+2" }],
    },
    {
      name: "decodes a UTF-8 escape",
      input: "q=caf%C3%A9",
      expected: [{ name: "q", value: "café" }],
    },
    {
      name: "skips empty pairs",
      input: "&a=1&&b=2&",
      expected: [{ name: "a", value: "1" }, { name: "b", value: "2" }],
    },
    {
      name: "gives a name without '=' an empty value",
      input: "flag&a=1",
      expected: [{ name: "flag", value: "" }, { name: "a", value: "1" }],
    },
    {
      name: "splits a pair at its first '='",
      input: "a=b=c",
      expected: [{ name: "a", value: "b=c" }],
    },
    { name: "gives '=value' an empty name", input: "=v", expected: [{ name: "", value: "v" }] },
    {
      name: "keeps repeated names in order",
      input: "a=1&a=2",
      expected: [{ name: "a", value: "1" }, { name: "a", value: "2" }],
    },
    {
      name: "decodes an OData filter",
      input: "$filter=Name+eq+%27x%27",
      expected: [{ name: "$filter", value: "Name eq 'x'" }],
    },
  ] as const;
  for (const c of cases) it(c.name, () => assert.deepEqual(parseQuery(c.input), c.expected));

  it("reads '%24top' and '$top' alike", () => {
    assert.deepEqual(parseQuery("%24top=5"), parseQuery("$top=5"));
  });

  it("reads '+' and '%20' alike", () => {
    assert.deepEqual(parseQuery("$filter=a+eq+1"), parseQuery("$filter=a%20eq%201"));
  });

  const broken = [
    { name: "refuses '%zz' in a value, naming the parameter", input: "$top=%zz", target: "$top" },
    { name: "refuses a lone '%' in a value", input: "a=%", target: "a" },
    { name: "refuses '%e9' without its continuation bytes", input: "name=caf%e9", target: "name" },
    { name: "refuses a truncated escape", input: "a=%2", target: "a" },
    {
      name: "refuses a broken escape in a name, naming the raw name",
      input: "%zz=1",
      target: "%zz",
    },
    {
      name: "names the decoded parameter when its value is broken",
      input: "%24top=%",
      target: "$top",
    },
  ] as const;
  for (const c of broken) {
    it(c.name, () => {
      assert.throws(() => parseQuery(c.input), {
        name: "HttpError",
        code: "ERR_HTTP_MALFORMED_URL",
        target: c.target,
      });
    });
  }
});

describe("decodeComponent()", () => {
  const cases = [
    { name: "returns text without escapes unchanged", input: "abc", expected: "abc" },
    { name: "decodes '+' to a space", input: "a+b", expected: "a b" },
    { name: "decodes percent escapes", input: "%24metadata", expected: "$metadata" },
    { name: "decodes an escaped percent sign", input: "100%25", expected: "100%" },
  ] as const;
  for (const c of cases) it(c.name, () => assert.equal(decodeComponent(c.input, "x"), c.expected));

  it("names the given target in the error", () => {
    assert.throws(() => decodeComponent("%", "where"), {
      name: "HttpError",
      code: "ERR_HTTP_MALFORMED_URL",
      target: "where",
    });
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { readTokenRequest } from "../../lib/auth/mod.ts";
import { makeRequest } from "../_helpers/http.ts";

function read(body: string, headers: Record<string, string>) {
  return readTokenRequest(makeRequest({ method: "POST", headers, body }));
}

const FORM = { "content-type": "application/x-www-form-urlencoded;charset=UTF-8" };

describe("readTokenRequest()", () => {
  it("decodes a form body, + and %20 as spaces", async () => {
    const request = await read("username=User+name&password=p%20w&scope=", FORM);
    assert.deepEqual([...request.params], [["username", "User name"], ["password", "p w"]]);
  });

  it("reads a flat JSON object, ignoring null and empty values", async () => {
    const request = await read(
      '{ "grant_type": "password", "scope": null, "x": "", "u": "caf\\u00e9" }',
      { "content-type": "application/json" },
    );
    assert.deepEqual([...request.params], [["grant_type", "password"], ["u", "café"]]);
  });

  const refused = [
    { name: "a repeated form parameter", body: "a=1&a=2", headers: FORM },
    {
      name: "a repeated JSON key",
      body: '{"a":"1","a":"2"}',
      headers: { "content-type": "application/json" },
    },
    {
      name: "a number in JSON",
      body: '{"expires": 5}',
      headers: { "content-type": "application/json" },
    },
    {
      name: "a nested JSON object",
      body: '{"a": {"b": "c"}}',
      headers: { "content-type": "application/json" },
    },
    { name: "a JSON array", body: '["a"]', headers: { "content-type": "application/json" } },
    {
      name: "trailing text after JSON",
      body: '{"a":"1"} x',
      headers: { "content-type": "application/json" },
    },
    { name: "a broken percent escape", body: "a=%zz", headers: FORM },
    { name: "an unsupported content type", body: "a=1", headers: { "content-type": "text/plain" } },
    {
      name: "Basic credentials that are not base64",
      body: "a=1",
      headers: { ...FORM, authorization: "Basic !!!" },
    },
    {
      name: "Basic credentials without a colon",
      body: "a=1",
      headers: { ...FORM, authorization: `Basic ${btoa("noColon")}` },
    },
    {
      name: "Basic credentials that are not UTF-8",
      body: "a=1",
      headers: { ...FORM, authorization: `Basic ${btoa("id:\xff\xfe")}` },
    },
    {
      name: "Basic credentials with a broken percent escape",
      body: "a=1",
      headers: { ...FORM, authorization: `Basic ${btoa("id:%zz")}` },
    },
    {
      name: "a JSON key that is not a string",
      body: '{a: "1"}',
      headers: { "content-type": "application/json" },
    },
    {
      name: "JSON without a colon",
      body: '{"a" "1"}',
      headers: { "content-type": "application/json" },
    },
  ] as const;
  for (const c of refused) {
    it(`refuses ${c.name} with invalid_request`, async () => {
      await assert.rejects(read(c.body, c.headers), { code: "ERR_AUTH_INVALID_REQUEST" });
    });
  }

  it("refuses a body that is not UTF-8", async () => {
    const request = makeRequest({
      method: "POST",
      headers: FORM,
      body: Uint8Array.of(0x61, 0x3d, 0xff, 0xfe),
    });
    await assert.rejects(readTokenRequest(request), { code: "ERR_AUTH_INVALID_REQUEST" });
  });

  it("form-url-decodes both halves of Basic credentials", async () => {
    const request = await read("a=1", {
      ...FORM,
      authorization: `Basic ${btoa("MY%5FCLIENT%5FID:se+cret%3A")}`,
    });
    assert.deepEqual(request.basic, { id: "MY_CLIENT_ID", secret: "se cret:" });
  });

  it("decodes UTF-8 Basic credentials", async () => {
    const utf8 = String.fromCharCode(...new TextEncoder().encode("clé:sécret"));
    const request = await read("a=1", { ...FORM, authorization: `Basic ${btoa(utf8)}` });
    assert.deepEqual(request.basic, { id: "clé", secret: "sécret" });
  });

  it("decodes a repeated Basic header alike", async () => {
    const headers = { ...FORM, authorization: `Basic ${btoa("again:pw%21")}` };
    assert.deepEqual((await read("a=1", headers)).basic, { id: "again", secret: "pw!" });
    assert.deepEqual((await read("a=1", headers)).basic, { id: "again", secret: "pw!" });
  });

  it("reads an empty JSON object", async () => {
    assert.equal((await read(" { } ", { "content-type": "application/json" })).params.size, 0);
  });

  it("ignores an Authorization header of another scheme", async () => {
    assert.equal((await read("a=1", { ...FORM, authorization: "Bearer abc" })).basic, undefined);
  });

  it("keeps the client's address for throttling", async () => {
    assert.equal((await read("a=1", FORM)).address, "127.0.0.1");
  });
});

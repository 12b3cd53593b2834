import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { contentSecurityPolicy } from "../../lib/web/mod.ts";

/** The directives of a policy, by name. */
function directives(policy: string): Map<string, string> {
  return new Map(
    policy.split(";").map((part) => {
      const [name, ...values] = part.trim().split(" ");
      return [name!, values.join(" ")];
    }),
  );
}

describe("contentSecurityPolicy()", () => {
  it("allows nothing by default but scripts, styles, images and requests of the page's own origin", () => {
    assert.deepEqual(Object.fromEntries(directives(contentSecurityPolicy())), {
      "default-src": "'none'",
      "script-src": "'self'",
      "style-src": "'self'",
      "img-src": "'self'",
      "connect-src": "'self'",
      "base-uri": "'none'",
      "form-action": "'self'",
      "frame-ancestors": "'none'",
    });
  });

  it("adds the image and request origins it is given, once each", () => {
    const policy = directives(
      contentSecurityPolicy({
        imgSrc: ["https://tiles.example.org", "https://tiles.example.org/"],
        connectSrc: ["http://127.0.0.1:9000"],
      }),
    );
    assert.equal(policy.get("img-src"), "'self' https://tiles.example.org");
    assert.equal(policy.get("connect-src"), "'self' http://127.0.0.1:9000");
    assert.equal(policy.get("script-src"), "'self'", "scripts stay the page's own");
  });

  it("allows data: images when asked, before the image origins, and nothing else from data:", () => {
    const policy = directives(
      contentSecurityPolicy({ dataImages: true, imgSrc: ["https://tiles.example.org"] }),
    );
    assert.equal(policy.get("img-src"), "'self' data: https://tiles.example.org");
    assert.equal(policy.get("connect-src"), "'self'");
  });

  it("requires Trusted Types when asked, allowing no policy", () => {
    const policy = directives(contentSecurityPolicy({ requireTrustedTypes: true }));
    assert.equal(policy.get("require-trusted-types-for"), "'script'");
    assert.equal(policy.get("trusted-types"), "'none'");
  });

  const refused = [
    { name: "a keyword", source: "'unsafe-inline'" },
    { name: "a path", source: "https://tiles.example.org/{z}/{x}/{y}.png" },
    { name: "a data: URL", source: "data:" },
    { name: "a wildcard", source: "*" },
  ] as const;
  for (const c of refused) {
    it(`refuses ${c.name} as an origin`, () => {
      assert.throws(() => contentSecurityPolicy({ imgSrc: [c.source] }), TypeError);
      assert.throws(() => contentSecurityPolicy({ connectSrc: [c.source] }), TypeError);
    });
  }
});

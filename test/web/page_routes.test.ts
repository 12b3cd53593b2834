import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { createRouter } from "../../lib/http/mod.ts";
import { contentSecurityPolicy, pageRoutes, type WebPage } from "../../lib/web/mod.ts";
import { bodyText, callHandler, makeRequest } from "../_helpers/http.ts";

const PAGE: WebPage = {
  html:
    '<!doctype html><link rel="stylesheet" href="{{page}}/p.css"><script type="module" src="{{page}}/p.js"></script>',
  assets: [
    { name: "p.css", contentType: "text/css; charset=utf-8", body: "body{margin:0}" },
    { name: "p.js", contentType: "text/javascript; charset=utf-8", body: "console.log(1);" },
  ],
};

/** A router with the page at /tools/page, and how many times it was loaded. */
function serve(load: () => Promise<WebPage> = () => Promise.resolve(PAGE)) {
  let loads = 0;
  const router = createRouter(pageRoutes("/tools/page", () => (loads++, load())));
  return { router, loads: () => loads };
}

describe("pageRoutes()", () => {
  it("serves the page's HTML at its path, its assets named under it", async () => {
    const { router } = serve();
    const page = await callHandler(router, makeRequest({ path: "/tools/page" }));
    assert.equal(page.status, 200);
    assert.equal(page.headers?.["content-type"], "text/html; charset=utf-8");
    assert.equal(
      await bodyText(page),
      '<!doctype html><link rel="stylesheet" href="/tools/page/p.css"><script type="module" src="/tools/page/p.js"></script>',
    );
    const script = await callHandler(router, makeRequest({ path: "/tools/page/p.js" }));
    assert.equal(script.headers?.["content-type"], "text/javascript; charset=utf-8");
    assert.equal(await bodyText(script), "console.log(1);");
    assert.equal(
      await bodyText(await callHandler(router, makeRequest({ path: "/tools/page/p.css" }))),
      "body{margin:0}",
    );
  });

  it("sends the policy and the hardening headers with every file, and no-cache so browsers check again", async () => {
    const { router } = serve();
    for (const path of ["/tools/page", "/tools/page/p.js", "/tools/page/p.css"]) {
      const { headers } = await callHandler(router, makeRequest({ path }));
      assert.equal(headers?.["content-security-policy"], contentSecurityPolicy(), path);
      assert.equal(headers?.["x-content-type-options"], "nosniff", path);
      assert.equal(headers?.["referrer-policy"], "no-referrer", path);
      assert.equal(headers?.["cache-control"], "no-cache", path);
      assert.match(headers?.["etag"] ?? "", /^"[0-9a-f]{32}"$/, path);
    }
  });

  it("uses the policy it is given", async () => {
    const policy = contentSecurityPolicy({ imgSrc: ["https://tiles.example.org"] });
    const router = createRouter(
      pageRoutes("/p", () => Promise.resolve(PAGE), { contentSecurityPolicy: policy }),
    );
    assert.equal(
      (await callHandler(router, makeRequest({ path: "/p" }))).headers?.["content-security-policy"],
      policy,
    );
  });

  it("answers 304 without a body when the browser's copy is current", async () => {
    const { router } = serve();
    const first = await callHandler(router, makeRequest({ path: "/tools/page/p.js" }));
    const again = await callHandler(
      router,
      makeRequest({
        path: "/tools/page/p.js",
        headers: { "if-none-match": first.headers!["etag"]! },
      }),
    );
    assert.equal(again.status, 304);
    assert.equal(again.body, undefined);
    const other = await callHandler(
      router,
      makeRequest({
        path: "/tools/page/p.css",
        headers: { "if-none-match": first.headers!["etag"]! },
      }),
    );
    assert.equal(other.status, 200, "another file's tag does not match");
  });

  it("answers 404 for a file the page does not have", async () => {
    const { router } = serve();
    await assert.rejects(callHandler(router, makeRequest({ path: "/tools/page/other.js" })), {
      code: "ERR_HTTP_NOT_FOUND",
    });
  });

  it("loads the page once, when its routes are made, before any request", async () => {
    const { router, loads } = serve();
    assert.equal(loads(), 1);
    await Promise.all([
      callHandler(router, makeRequest({ path: "/tools/page" })),
      callHandler(router, makeRequest({ path: "/tools/page/p.js" })),
    ]);
    await callHandler(router, makeRequest({ path: "/tools/page" }));
    assert.equal(loads(), 1);
  });

  it("answers 503 while the page cannot be loaded, and loads it again on the next request", async () => {
    let fail = true;
    const { router, loads } = serve(
      () => (fail ? Promise.reject(new Error("tsc exited with 2")) : Promise.resolve(PAGE)),
    );
    await assert.rejects(
      callHandler(router, makeRequest({ path: "/tools/page" })),
      (error: { code?: string; message: string; headers?: Record<string, string> }) => {
        assert.equal(error.code, "ERR_HTTP_UNAVAILABLE");
        assert.match(error.message, /Cannot serve the page \/tools\/page: tsc exited with 2/);
        assert.equal(error.headers?.["retry-after"], "5");
        return true;
      },
    );
    fail = false;
    assert.equal((await callHandler(router, makeRequest({ path: "/tools/page" }))).status, 200);
    assert.equal(
      loads(),
      2,
      "the load as the routes were made, which the first request met, and one more",
    );
  });

  it("refuses a path that is not plain segments, and an asset name that is not a plain file name", async () => {
    for (const path of ["", "/", "tools", "/tools/", "/a b", "/<x>", "/a/:id"]) {
      assert.throws(() => pageRoutes(path, () => Promise.resolve(PAGE)), TypeError, path);
    }
    const router = createRouter(
      pageRoutes("/p", () =>
        Promise.resolve({
          html: "",
          assets: [{ name: "../x.js", contentType: "text/plain", body: "" }],
        })),
    );
    await assert.rejects(callHandler(router, makeRequest({ path: "/p" })), {
      code: "ERR_HTTP_UNAVAILABLE",
    });
  });
});

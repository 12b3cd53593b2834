// The sync client in headless Chromium: lib/sync_client compiled by the
// project's tsc (no bundler, no Node module on the way), served beside the
// token and sync service from one origin; indexedDbStorage keeps what it is
// given across a page reload, and a client's outbox written before a reload
// is sent by the client of the reloaded page.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, Page } from "playwright-core";
import { type App, createApp, readConfig } from "../../lib/app/mod.ts";
import { createNodeListener } from "../../lib/http/mod.ts";
import { browserSkip, launchBrowser } from "../_helpers/browser.ts";
import { SyncServer } from "../_helpers/sync_server.ts";

const ROOT = join(import.meta.dirname, "..", "..");

describe("indexedDbStorage() and the client in Chromium", { skip: browserSkip }, () => {
  const out = mkdtempSync(join(tmpdir(), "tributary-sync-client-browser-"));
  let app: App;
  let server: Server;
  let url = "";
  let browser: Browser;
  let page: Page;

  before(async () => {
    const tsc = spawnSync(join(ROOT, "node_modules", ".bin", "tsc"), [
      "-p",
      join(ROOT, "tsconfig.sync_client.json"),
      "--noEmit",
      "false",
      "--outDir",
      out,
      "--rewriteRelativeImportExtensions",
      "--rootDir",
      join(ROOT, "lib", "sync_client"),
    ], { encoding: "utf8" });
    assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
    app = createApp(
      readConfig({
        SERVICES: "sync",
        STATE_DIR: "",
        PASSWORD_HASH_COST: "1024",
        RATE_LIMIT_PER_SECOND: "0",
        RATE_LIMIT_CONCURRENCY: "0",
      }),
      { log: { info: () => {}, error: () => {} } },
    );
    await app.start();
    const api = createNodeListener(app.handler);
    server = createServer((req, res) => {
      const path = new URL(req.url ?? "/", "http://x").pathname;
      if (path === "/") {
        res.writeHead(200, { "content-type": "text/html; charset=utf-8" });
        res.end("<!doctype html><title>sync client</title>");
      } else if (/^\/client\/[a-z_]+\.js$/.test(path)) {
        res.writeHead(200, { "content-type": "text/javascript; charset=utf-8" });
        res.end(readFileSync(join(out, path.slice("/client/".length))));
      } else api(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const signUp = new SyncServer();
    signUp.url = url;
    await signUp.signUp("browser-user");
    browser = await launchBrowser();
    page = await browser.newPage();
    await page.goto(`${url}/`);
  });

  after(async () => {
    await browser?.close();
    await new Promise((resolve) => server?.close(resolve));
    await app?.close();
    rmSync(out, { recursive: true, force: true });
  });

  it("keeps entries across a reload, writes several keys in one transaction, and deletes", async () => {
    await page.evaluate(`(async () => {
      const { indexedDbStorage } = await import("/client/mod.js");
      const storage = indexedDbStorage("contract");
      await storage.write(new Map([["a", { uuid: "x", n: 1 }], ["b", "text"], ["c", true]]));
      await storage.write(new Map([["b", undefined]]));
      await storage.close();
    })()`);
    await page.reload();
    const loaded = await page.evaluate(`(async () => {
      const { indexedDbStorage } = await import("/client/mod.js");
      const storage = indexedDbStorage("contract");
      const entries = [...(await storage.load())].sort();
      await storage.close();
      return entries;
    })()`);
    assert.deepEqual(loaded, [["a", { uuid: "x", n: 1 }], ["c", true]]);
  });

  it("sends, after a reload, the outbox a client of the page before wrote to IndexedDB", async () => {
    const queued = await page.evaluate(`(async () => {
      const { createSyncClient, indexedDbStorage } = await import("/client/mod.js");
      const client = createSyncClient({ baseUrl: location.origin, clientId: "demo-app", storage: indexedDbStorage("device") });
      await client.login("browser-user", "correct horse battery");
      await client.sync();
      for (const n of [1, 2]) {
        await client.put("messages", { uuid: "20000000-0000-4000-8000-00000000000" + n, subject: "From the browser " + n, body: "", sent_at: "2026-11-24T08:00:00Z" });
      }
      const pending = client.pending();
      await client.close();
      return pending;
    })()`);
    assert.equal(queued, 2);
    await page.reload();
    const after = await page.evaluate(`(async () => {
      const { createSyncClient, indexedDbStorage } = await import("/client/mod.js");
      const client = createSyncClient({ baseUrl: location.origin, clientId: "demo-app", storage: indexedDbStorage("device") });
      await client.ready();
      const before = client.pending();
      await client.sync();
      const result = { before, pending: client.pending(), subjects: client.list("messages").map((m) => m.subject) };
      await client.close();
      return result;
    })()`);
    assert.deepEqual(after, {
      before: 2,
      pending: 0,
      subjects: ["From the browser 1", "From the browser 2"],
    });
    const server = new SyncServer();
    server.url = url;
    const snapshot = await server.snapshot("browser-user");
    assert.deepEqual(snapshot.objects.messages.map((m) => m.subject), [
      "From the browser 1",
      "From the browser 2",
    ]);
  });
});

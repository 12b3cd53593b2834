// The sync playground at /sync/playground, end to end: the real server
// (server.ts) with the token and sync service and the demo clients; the page
// in headless Chromium signs a user up, and its two devices (two sync
// clients, each with its own store) see each other's writes through the
// change stream without a reload; one device offline edits a message the
// other edits too, and back online meets the conflict, decided by the policy
// chosen (server wins, then local wins), both devices ending alike and alike
// with the server. Screenshots at desktop and phone widths go to
// test-artifacts/.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Locator, Page } from "playwright-core";
import { browserSkip, launchBrowser, saveScreenshot, VIEWPORTS } from "../_helpers/browser.ts";
import {
  assertNoSidewaysScroll,
  assertQuiet,
  assertReadableText,
  fetchPage,
  inContext,
  type OpenedPage,
  openPage,
  PHONE,
} from "../_helpers/page_harness.ts";
import { until } from "../_helpers/relay_e2e.ts";
import { listeningUrl, startServer } from "../_helpers/server.ts";

const USER = { username: "playground-ada", password: "correct horse battery" } as const;
/** The sign-up client of data/clients.json, whose secret the user pastes. */
const SIGNUP_SECRET = "demo-backend-secret";

let url = "";
let browser: Browser;

/** The user's messages as the server holds them: subject by uuid. */
async function serverSubjects(): Promise<Map<string, string>> {
  const login = await fetch(`${url}/oauth2/token`, {
    method: "POST",
    body: new URLSearchParams({ grant_type: "password", client_id: "demo-app", ...USER }),
  });
  assert.equal(login.status, 200);
  const { access_token: token } = (await login.json()) as { access_token: string };
  const snapshot = await fetch(`${url}/api/v2/sync/user`, {
    headers: { authorization: `Bearer ${token}` },
  });
  assert.equal(snapshot.status, 200);
  const body = (await snapshot.json()) as {
    data: { objects: { messages?: { uuid: string; subject: string }[] } };
  };
  return new Map(
    (body.data.objects.messages ?? []).map((message) => [message.uuid, message.subject]),
  );
}

/** A new page whose requests and errors (script errors, console errors such as a policy violation) are recorded. */
function openPlayground(context: BrowserContext): Promise<OpenedPage> {
  return openPage(context, `${url}/sync/playground`);
}

/** The subjects a device lists, in order. */
function subjects(device: Locator): Promise<string[]> {
  return device.locator("ul.messages .subject").allInnerTexts();
}

/** Waits until a device lists exactly these subjects. */
async function lists(device: Locator, expected: readonly string[]): Promise<void> {
  await until(async () => JSON.stringify(await subjects(device)) === JSON.stringify(expected));
}

/** Edits the one message a device lists, as a person does: Edit, the new subject, Enter. */
async function editMessage(device: Locator, subject: string): Promise<void> {
  await device.locator("ul.messages button", { hasText: "Edit" }).click();
  const field = device.locator("ul.messages form.edit input");
  await field.fill(subject);
  await field.press("Enter");
}

/** Waits until both devices are logged in, in step with the server, their streams open. */
async function devicesReady(page: Page): Promise<void> {
  for (const id of ["device-a", "device-b"]) {
    await page.locator(`#${id}[data-stream="open"] .badge[data-phase="idle"]`).waitFor();
  }
}

describe(
  "the sync playground at /sync/playground, in headless Chromium",
  { skip: browserSkip },
  () => {
    before(async () => {
      const started = startServer({ SERVICES: "sync" });
      [url, browser] = await Promise.all([listeningUrl(started), launchBrowser()]);
    });

    after(async () => {
      await browser?.close();
    });

    it("serves the page without a token under a strict Content-Security-Policy, the sync client's modules beside it", async () => {
      const { html, links, files } = await fetchPage(`${url}/sync/playground`, {
        "default-src": ["'none'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "connect-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "require-trusted-types-for": ["'script'"],
        "trusted-types": ["'none'"],
      });
      assert.deepEqual(links.filter((href) => !href.startsWith("data:")), [
        "/sync/playground/page.css",
        "/sync/playground/playground.css",
        "/sync/playground/playground.js",
      ]);
      // The pages' shared stylesheet and the playground's own.
      for (const file of files.filter((file) => file.path.endsWith(".css"))) {
        assert.match(file.contentType, /^text\/css/, file.path);
      }
      // Every module the page loads, followed from its entry through their imports.
      const modules = files.filter((file) => file.path.endsWith(".js"));
      let bytes = Buffer.byteLength(html);
      for (const file of modules) {
        assert.match(file.contentType, /^text\/javascript/, file.path);
        bytes += Buffer.byteLength(file.body);
      }
      const loaded = modules.map((file) => file.path);
      const names = loaded.map((file) => file.slice("/sync/playground/".length));
      for (const name of ["playground.js", "device.js", "changes.js", "dom.js"]) {
        assert.ok(names.includes(name), `${name} is loaded`);
      }
      assert.ok(names.includes("sync_client.mod.js"), "the sync client, by its domain's mod.js");
      assert.ok(names.includes("sync_client.create_sync_client.js"));
      assert.ok(
        names.every((name) => /^[a-z_]+\.js$|^sync_client\.[a-z_]+\.js$/.test(name)),
        names.join(" "),
      );
      console.log(`# the playground's HTML and ${loaded.length} modules: ${bytes} bytes`);
      assert.ok(bytes < 200 * 1024, `${bytes} bytes`);
    });

    it("signs up, and two devices see each other's writes pushed, meet conflicts by the policy chosen, and converge", async () => {
      await inContext(browser, { viewport: VIEWPORTS.desktop }, async (context) => {
        const opened = await openPlayground(context);
        const { page, requests } = opened;
        await page.fill("#username", USER.username);
        await page.fill("#password", USER.password);
        await page.click("#signup-client summary");
        await page.fill("#signup-secret", SIGNUP_SECRET);
        await page.click("#signup");
        await devicesReady(page);
        const a = page.locator("#device-a");
        const b = page.locator("#device-b");

        // A writes; B sees it pushed over its stream, without a reload.
        await a.locator("form.add input").fill("Gauge 7 offline");
        await a.locator("form.add input").press("Enter");
        await lists(b, ["Gauge 7 offline"]);
        await lists(a, ["Gauge 7 offline"]);
        assert.ok(await b.locator("ol.revisions li").count() >= 1, "B logged a pushed revision");

        // B edits; A sees it.
        await editMessage(b, "Gauge 7 back");
        await lists(a, ["Gauge 7 back"]);

        // Server wins (the default): A offline edits, B edits the same message, A back online.
        await a.locator(".offline-switch").check();
        await page.locator('#device-a[data-online="false"] .badge[data-phase="offline"]').waitFor();
        await editMessage(a, "A offline edit");
        // Kept in A's outbox (made into a patch, which cannot go) until A is back.
        await a.locator("ol.outbox li", { hasText: "put messages “A offline edit”" }).waitFor();
        await editMessage(b, "B wins");
        await until(async () => [...(await serverSubjects()).values()].includes("B wins"));
        await lists(a, ["A offline edit"]);
        await a.locator(".offline-switch").uncheck();
        const serverWon = a.locator('ol.conflicts li[data-kept="server"]');
        await serverWon.waitFor();
        assert.match(await serverWon.innerText(), /here “A offline edit”, on the server “B wins”/);
        await lists(a, ["B wins"]);
        await lists(b, ["B wins"]);
        await page.locator('#device-a[data-outbox="0"]').waitFor();

        // Local wins: chosen on A before the conflict comes.
        await a.locator("select.policy").selectOption("local");
        await a.locator(".offline-switch").check();
        await editMessage(a, "A wins");
        await editMessage(b, "B loses");
        await until(async () => [...(await serverSubjects()).values()].includes("B loses"));
        await a.locator(".offline-switch").uncheck();
        const localWon = a.locator('ol.conflicts li[data-kept="local"]');
        await localWon.waitFor();
        assert.match(await localWon.innerText(), /here “A wins”, on the server “B loses”/);
        await lists(b, ["A wins"]);
        await lists(a, ["A wins"]);
        await until(async () =>
          JSON.stringify([...(await serverSubjects()).values()]) === JSON.stringify(["A wins"])
        );
        assert.equal(await b.locator("ol.conflicts li").count(), 0, "B met no conflict");
        await page.locator('#device-a[data-outbox="0"] .badge[data-phase="idle"]').waitFor();
        await saveScreenshot(page, "playground-desktop");

        // B deletes; A's list empties.
        await b.locator("ul.messages button", { hasText: "Delete" }).click();
        await lists(a, []);
        await until(async () => (await serverSubjects()).size === 0);

        assert.ok(
          requests.some((request) => request.includes("/api/v2/sync/user/changes")),
          "the devices held the change stream",
        );
        assert.ok(
          requests.includes(`${url}/sync/playground/sync_client.mod.js`),
          "the sync client, under the playground's path",
        );
        assertQuiet(opened, url);
      });
    });

    it("logs in on a phone and reads without sideways scrolling", async () => {
      await inContext(browser, PHONE, async (context) => {
        const opened = await openPlayground(context);
        const { page } = opened;
        await page.fill("#username", USER.username);
        await page.fill("#password", USER.password);
        await page.click("#login");
        await devicesReady(page);
        const a = page.locator("#device-a");
        await a.locator("form.add input").fill(
          "A subject long enough to wrap on a narrow phone screen",
        );
        await a.locator("form.add input").press("Enter");
        await until(async () =>
          (await subjects(page.locator("#device-b"))).includes(
            "A subject long enough to wrap on a narrow phone screen",
          )
        );
        await assertNoSidewaysScroll(page);
        await assertReadableText(page, "#device-b ul.messages .subject");
        await saveScreenshot(page, "playground-phone");
        assertQuiet(opened, url);
      });
    });
  },
);

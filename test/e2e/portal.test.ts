// The relay portal at /webhook/portal, end to end: the real server
// (server.ts) with the relay, a tenants file and a receiver on 127.0.0.1
// that fails each message's first delivery and takes the next; the page in
// headless Chromium lists the failed message, replays it and shows the new
// attempt delivered. Screenshots at desktop and phone widths go to
// test-artifacts/.
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
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

const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const KEYS = { acme: "portal-acme-key", globex: "portal-globex-key" } as const;

/** A receiver that answers each message's first delivery 500 and every later one 204. */
class FlakyReceiver {
  /** Arrivals by webhook-id. */
  readonly seen = new Map<string, number>();
  readonly #waiters = new Set<() => void>();
  readonly server: Server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      const id = String(request.headers["webhook-id"]);
      const count = (this.seen.get(id) ?? 0) + 1;
      this.seen.set(id, count);
      if (count === 1) response.writeHead(500, { "content-type": "text/plain" }).end("not yet");
      else response.writeHead(204).end();
      for (const wake of this.#waiters) wake();
    });
  });

  /** Resolves once a message has arrived `times` times. */
  arrived(id: string, times: number): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if ((this.seen.get(id) ?? 0) < times) return;
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
      check();
    });
  }

  async listen(): Promise<string> {
    this.server.listen(0, "127.0.0.1");
    await once(this.server, "listening");
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

interface ApiMessage {
  readonly id: string;
  readonly deliveries: readonly {
    readonly id: string;
    readonly state: string;
    readonly attempts: readonly { readonly outcome: string; readonly status: number | null }[];
  }[];
}

const receiver = new FlakyReceiver();
const dir = mkdtempSync(join(tmpdir(), "tributary-portal-"));
let url = "";
let browser: Browser;

async function api<T>(tenant: keyof typeof KEYS, path: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(`${url}/webhook${path}`, {
    ...init,
    headers: { authorization: `Bearer ${KEYS[tenant]}`, "content-type": "application/json" },
  });
  assert.ok(response.ok, `${path}: ${response.status}`);
  return (await response.json()) as T;
}

/** Posts a webhook and waits until its delivery has failed and died (MAX_ATTEMPTS=1). */
async function deadMessage(tenant: keyof typeof KEYS, event: string): Promise<string> {
  const { id } = await api<{ id: string }>(tenant, "", {
    method: "POST",
    body: JSON.stringify({ event, data: { n: 1 } }),
  });
  await receiver.arrived(id, 1);
  // Answered 500: the relay buries it as soon as it has the answer.
  await until(
    async () =>
      (await api<ApiMessage>(tenant, `/messages/${id}`)).deliveries.every((delivery) =>
        delivery.state === "dead"
      ),
    20_000,
  );
  return id;
}

/** A new page whose requests (with their Authorization header) and errors (script errors, console errors such as a policy violation) are recorded. */
async function openPortal(
  context: BrowserContext,
): Promise<OpenedPage & { readonly unkeyed: readonly string[] }> {
  const unkeyed: string[] = [];
  const opened = await openPage(context, `${url}/webhook/portal`, (page) => {
    page.on("request", (request) => {
      const path = new URL(request.url()).pathname;
      const isApi = path.startsWith("/webhook/") && !path.startsWith("/webhook/portal");
      if (isApi && request.headers()["authorization"] === undefined) unkeyed.push(request.url());
    });
  });
  return { ...opened, unkeyed };
}

/** Gives the key the way a person does: typed into its field, then Enter. */
async function giveKey(page: Page, key: string): Promise<void> {
  await page.focus("#key");
  await page.keyboard.type(key);
  await page.keyboard.press("Enter");
  await page.waitForSelector("#main:not([hidden])");
  assert.equal(
    await page.isVisible("#key"),
    false,
    "the key's field is put away once the key is given",
  );
}

describe("the relay portal at /webhook/portal, in headless Chromium", { skip: browserSkip }, () => {
  before(async () => {
    const receiverUrl = await receiver.listen();
    const tenants = join(dir, "tenants.json");
    writeFileSync(
      tenants,
      JSON.stringify({
        tenants: [
          {
            id: "acme",
            api_keys: [KEYS.acme],
            endpoints: [
              { id: "hook", url: `${receiverUrl}/hook`, events: ["*"], secret: SECRET },
              {
                id: "archive",
                url: `${receiverUrl}/archive`,
                events: ["archive.*"],
                secret: SECRET,
                enabled: false,
              },
            ],
          },
          {
            id: "globex",
            api_keys: [KEYS.globex],
            endpoints: [{
              id: "orders",
              url: `${receiverUrl}/orders`,
              events: ["*"],
              secret: SECRET,
            }],
          },
        ],
      }),
    );
    const started = startServer({
      SERVICES: "relay",
      TENANTS_FILE: tenants,
      ALLOW_PRIVATE_TARGETS: "127.0.0.1/32",
      MAX_ATTEMPTS: "1",
    });
    [url, browser] = await Promise.all([listeningUrl(started), launchBrowser()]);
  });

  after(async () => {
    await browser?.close();
    receiver.server.close();
    receiver.server.closeAllConnections();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves the page without a key under a strict Content-Security-Policy, nothing inline, in under 100 KB", async () => {
    const { links, files, bytes } = await fetchPage(`${url}/webhook/portal`, {
      "default-src": ["'none'"],
      "script-src": ["'self'"],
      "style-src": ["'self'"],
      "connect-src": ["'self'"],
      "img-src": ["'self'", "data:"], // data: for the empty icon only
      "frame-ancestors": ["'none'"],
      "require-trusted-types-for": ["'script'"],
    });
    assert.deepEqual(links.filter((href) => !href.startsWith("data:")).sort(), [
      "/webhook/portal/page.css",
      "/webhook/portal/portal.css",
      "/webhook/portal/portal.js",
    ]);
    // The page's module and the module it imports, the pages' shared API client, beside it.
    const loaded = files.map((file) => file.path);
    assert.deepEqual(loaded.sort(), [
      "/webhook/portal/api_client.js",
      "/webhook/portal/page.css",
      "/webhook/portal/portal.css",
      "/webhook/portal/portal.js",
    ]);
    console.log(
      `# the portal's HTML, CSS and JavaScript (${
        loaded.length - 2
      } modules): ${bytes} bytes before any data`,
    );
    assert.ok(bytes < 100 * 1024, `${bytes} bytes`);
  });

  it("lists a failed message, replays it and shows the new attempt delivered, asking no origin but the server's", async () => {
    const id = await deadMessage("acme", "order.created");
    await inContext(browser, { viewport: VIEWPORTS.desktop }, async (context) => {
      const opened = await openPortal(context);
      const { page, requests, unkeyed } = opened;
      await giveKey(page, KEYS.acme);

      // The endpoints: states and success rates.
      const hook = page.locator('#endpoints tr[data-endpoint="hook"]');
      await assert.doesNotReject(hook.waitFor());
      assert.match(await hook.innerText(), /enabled/);
      assert.match(await hook.locator(".rate").innerText(), /^0% of 1$/);
      assert.match(
        await page.locator('#endpoints tr[data-endpoint="archive"]').innerText(),
        /disabled/,
      );

      // The failed message in the log, narrowed to dead ones, its attempt open.
      await page.selectOption("#filters select[name=status]", "dead");
      await page.click("#filters button[type=submit]");
      const item = page.locator(`#messages li[data-message="${id}"]`);
      await item.waitFor();
      assert.equal(await item.getAttribute("data-status"), "dead");
      assert.equal(await page.locator("#messages li").count(), 1, "only the dead message");
      await item.locator("summary").click();
      const firstTry = item.locator(".attempts tbody tr");
      assert.equal(await firstTry.count(), 1);
      assert.deepEqual(
        await firstTry.locator("td").allInnerTexts().then((
          cells,
        ) => [cells[2], cells[3], cells[5]]),
        ["failure", "500", "HTTP 500"],
      );
      await saveScreenshot(page, "portal-desktop");

      // Replayed: the page watches the message until its new attempt is in.
      await item.locator(".delivery button", { hasText: "Replay" }).click();
      await page.waitForSelector(`#messages li[data-message="${id}"][data-status="delivered"]`, {
        timeout: 20_000,
      });
      const outcomes = await page.locator(`#messages li[data-message="${id}"] .attempts tbody tr`)
        .evaluateAll(
          (rows) =>
            rows.map((row) => (row as unknown as { dataset: { outcome: string } }).dataset.outcome),
        );
      assert.deepEqual(outcomes, ["failure", "success"]);
      assert.equal(
        receiver.seen.get(id),
        2,
        "the receiver got the message twice, under one webhook-id",
      );
      const message = await api<ApiMessage>("acme", `/messages/${id}`);
      assert.deepEqual(
        message.deliveries[0]!.attempts.map((attempt) => [attempt.outcome, attempt.status]),
        [["failure", 500], ["success", 204]],
      );
      await page.waitForFunction(
        (selector) =>
          (globalThis as unknown as {
            document: { querySelector(s: string): { textContent: string | null } | null };
          }).document.querySelector(selector)?.textContent === "50% of 2",
        '#endpoints tr[data-endpoint="hook"] .rate',
      );

      // The secret rotated from the page: the one it shows is the one that signs now.
      await hook.locator("button", { hasText: "Rotate secret" }).click();
      await hook.locator("button", { hasText: "Rotate hook's secret" }).click();
      await page.waitForSelector("#secret:not([hidden])");
      const shown = await page.textContent("#secret-value");
      const secrets = await api<{ secrets: { secret: string; expires_at: string | null }[] }>(
        "acme",
        "/endpoints/hook/secret",
      );
      assert.equal(secrets.secrets[0]!.secret, shown);
      assert.equal(secrets.secrets.length, 2, "the old secret signs alongside for the overlap");
      assert.notEqual(shown, SECRET);

      // The key forgotten: the log is gone from view and from the tab's storage.
      await page.click("#forget");
      await page.waitForSelector("#main", { state: "hidden" });
      assert.equal(await page.isVisible("#key"), true);
      assert.equal(
        await page.evaluate<string | null>('sessionStorage.getItem("tributary.relay.key")'),
        null,
      );

      assert.ok(
        requests.some((request) => request.includes("/webhook/messages")),
        "the log came from the API",
      );
      assert.ok(
        requests.includes(`${url}/webhook/portal/api_client.js`),
        "the pages' shared API client, under the portal's path",
      );
      assert.deepEqual(unkeyed, [], "every API request carries the key");
      assertQuiet(opened, url);
    });
  });

  it("reads on a phone without sideways scrolling, and replays every dead letter from the keyboard", async () => {
    const ids = [
      await deadMessage("globex", "order.paid"),
      await deadMessage("globex", "order.refunded"),
    ];
    await inContext(browser, PHONE, async (context) => {
      const opened = await openPortal(context);
      const { page } = opened;
      await giveKey(page, KEYS.globex);
      for (const id of ids) {
        await page.locator(`#messages li[data-message="${id}"][data-status="dead"]`).waitFor();
      }
      await assertNoSidewaysScroll(page);
      await assertReadableText(page, "#messages summary");
      await saveScreenshot(page, "portal-phone");

      await page.focus("#refresh");
      await page.keyboard.press("Tab");
      assert.equal(
        await page.evaluate<string>("document.activeElement.id"),
        "replay-all",
        "Tab reaches the replay button",
      );
      await page.keyboard.press("Enter");
      await page.waitForFunction(
        () =>
          (globalThis as unknown as {
            document: { querySelector(s: string): { textContent: string | null } | null };
          }).document.querySelector("#status")?.textContent === "Replayed 2 dead letters",
      );
      await Promise.all(ids.map((id) => receiver.arrived(id, 2)));
      assertQuiet(opened, url);
    });
  });
});

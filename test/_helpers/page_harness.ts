// What the tests of the web pages (the explorer, the relay portal, the sync
// playground) do alike, in headless Chromium (see browser.ts): open a page
// recording its requests and errors, check how the server serves it (its
// Content-Security-Policy, nothing inline, every file it loads), and check
// that it reads on a phone without sideways scrolling.
import assert from "node:assert/strict";
import type { Browser, BrowserContext, BrowserContextOptions, Page } from "playwright-core";
import { foreignRequests, parseCsp, recordRequests, VIEWPORTS } from "./browser.ts";

/** A browser context as a phone's: its width, touch, and the page laid out as on a phone. */
export const PHONE: BrowserContextOptions = {
  viewport: VIEWPORTS.phone,
  isMobile: true,
  hasTouch: true,
};

/**
 * Runs `use` in a new browser context, closed afterwards whatever happens.
 * @param browser the browser
 * @param options the context's, e.g. `{ viewport: VIEWPORTS.desktop }` or {@linkcode PHONE}
 * @param use what to do in it
 */
export async function inContext<T>(
  browser: Browser,
  options: BrowserContextOptions,
  use: (context: BrowserContext) => Promise<T>,
): Promise<T> {
  const context = await browser.newContext(options);
  try {
    return await use(context);
  } finally {
    await context.close();
  }
}

/** A page opened by {@linkcode openPage}, with what it asked for and the errors it met. */
export interface OpenedPage {
  readonly page: Page;
  /** The URL of every request the page made, growing as it asks for more. */
  readonly requests: readonly string[];
  /** Script errors, and console errors (a request the policy blocked, a failed load). */
  readonly errors: readonly string[];
}

/**
 * Opens `url` in a new page of `context`, recording its requests and its
 * errors from the start.
 * @param context the browser context
 * @param url the page's URL
 * @param prepare what to set up on the page before it loads (listeners of its own, init scripts)
 */
export async function openPage(
  context: BrowserContext,
  url: string,
  prepare?: (page: Page) => void | Promise<void>,
): Promise<OpenedPage> {
  const page = await context.newPage();
  const requests = recordRequests(page);
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("console", (message) => {
    if (message.type() === "error") errors.push(message.text());
  });
  await prepare?.(page);
  await page.goto(url);
  return { page, requests, errors };
}

/**
 * Asserts that a page asked no origin but `origin` (and `allowed`) and met
 * no script error and no policy violation.
 * @param opened what {@linkcode openPage} recorded
 * @param origin the server's origin
 * @param allowed other origins the page may reach, e.g. a configured tile server
 */
export function assertQuiet(
  opened: Pick<OpenedPage, "requests" | "errors">,
  origin: string,
  allowed: readonly string[] = [],
): void {
  assert.deepEqual(
    foreignRequests(opened.requests, origin, allowed),
    [],
    "no request to another origin",
  );
  assert.deepEqual(opened.errors, [], "no script error, no policy violation");
}

/** A page as the server served it, checked by {@linkcode fetchPage}. */
export interface ServedPage {
  readonly html: string;
  readonly headers: Headers;
  /** The directives of its Content-Security-Policy, by name. */
  readonly csp: ReadonlyMap<string, string[]>;
  /** What its `src` and `href` attributes name, but fragments (`#main`), in order. */
  readonly links: readonly string[];
  /** The files it loads from its origin (its links by path, and the modules they import). */
  readonly files: readonly PageFile[];
  /** The bytes of its HTML and of those files. */
  readonly bytes: number;
}

/**
 * Fetches a page (without a credential) and asserts that it is served as
 * HTML, 200, with `X-Content-Type-Options: nosniff` and these directives of
 * its Content-Security-Policy, and with nothing inline: every script has a
 * src, no style element or attribute, no event handler attribute; then
 * fetches the files it loads from its origin, as {@linkcode fetchPageFiles}.
 * @param url the page's URL
 * @param directives the policy's directives to check, each with its sources in order
 */
export async function fetchPage(
  url: string,
  directives: Readonly<Record<string, readonly string[]>>,
): Promise<ServedPage> {
  const response = await fetch(url);
  assert.equal(response.status, 200);
  assert.match(response.headers.get("content-type") ?? "", /^text\/html/);
  assert.equal(response.headers.get("x-content-type-options"), "nosniff");
  const csp = parseCsp(response.headers.get("content-security-policy") ?? "");
  for (const [name, sources] of Object.entries(directives)) {
    assert.deepEqual(csp.get(name), sources, name);
  }
  const html = await response.text();
  assert.doesNotMatch(html, /<script(?![^>]*\ssrc=)[^>]*>/i, "every script has a src");
  assert.doesNotMatch(
    html,
    /<style|\sstyle=|\son[a-z]+=/i,
    "no style element or attribute, no handler attribute",
  );
  const links = [...html.matchAll(/\s(?:src|href)="([^"]+)"/g)].map((match) => match[1]!)
    .filter((href) => !href.startsWith("#"));
  const files = await fetchPageFiles(
    new URL(url).origin,
    links.filter((href) => href.startsWith("/")),
  );
  const bytes = files.reduce(
    (sum, file) => sum + Buffer.byteLength(file.body),
    Buffer.byteLength(html),
  );
  return { html, headers: response.headers, csp, links, files, bytes };
}

/** A file a page loads, as {@linkcode fetchPageFiles} fetched it. */
export interface PageFile {
  /** Its path, e.g. `/webhook/portal/portal.js`. */
  readonly path: string;
  readonly contentType: string;
  readonly body: string;
}

/**
 * Fetches the files a page loads, from `paths` and, for a module, every
 * module it imports (followed through their imports, each once), asserting
 * that each is served 200 under the page's policy.
 * @param origin the server's origin
 * @param paths the files to start from, e.g. the page's stylesheets and its module
 * @returns the files, in the order they were fetched
 */
export async function fetchPageFiles(
  origin: string,
  paths: readonly string[],
): Promise<PageFile[]> {
  const pending = [...paths];
  const files: PageFile[] = [];
  const seen = (path: string): boolean =>
    pending.includes(path) || files.some((file) => file.path === path);
  for (let path = pending.shift(); path !== undefined; path = pending.shift()) {
    const response = await fetch(`${origin}${path}`);
    assert.equal(response.status, 200, path);
    assert.ok(
      response.headers.get("content-security-policy") !== null,
      `${path} has the policy too`,
    );
    const body = await response.text();
    files.push({ path, contentType: response.headers.get("content-type") ?? "", body });
    if (!path.endsWith(".js")) continue;
    for (
      const [, specifier] of body.matchAll(/^(?:import|export)\b[^'"`;]*?\bfrom\s*"([^"]+)"/gm)
    ) {
      const imported = new URL(specifier!, `${origin}${path}`).pathname;
      if (!seen(imported)) pending.push(imported);
    }
  }
  return files;
}

/**
 * Asserts that a page on a phone (see {@linkcode PHONE}) is no wider than
 * the phone and its window: nothing scrolls sideways.
 * @param page the page
 */
export async function assertNoSidewaysScroll(page: Page): Promise<void> {
  const [scrollWidth, innerWidth] = await page.evaluate<[number, number]>(
    "[document.documentElement.scrollWidth, window.innerWidth]",
  );
  assert.ok(scrollWidth <= VIEWPORTS.phone.width, `the page is ${scrollWidth} px wide`);
  assert.ok(scrollWidth <= innerWidth, `no horizontal scroll of the page (${innerWidth} px)`);
}

/**
 * Asserts that the text of the first element `selector` matches is set at
 * 14 px or more.
 * @param page the page
 * @param selector e.g. `#messages summary`
 */
export async function assertReadableText(page: Page, selector: string): Promise<void> {
  const fontSize = await page.evaluate<string>(
    `getComputedStyle(document.querySelector(${JSON.stringify(selector)})).fontSize`,
  );
  assert.ok(Number.parseFloat(fontSize) >= 14, `text at ${fontSize}`);
}

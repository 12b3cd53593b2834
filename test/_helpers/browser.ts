// Headless Chromium for the tests of the web pages: Debian's `chromium`
// (apt; .ci/run installs it) driven by playwright-core, which downloads no
// browser. Without the binary a developer's run skips these tests and says so;
// REQUIRE_SERVICES=1 makes that a failure.
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";

const ROOT = join(import.meta.dirname, "..", "..");

/** Where Debian installs Chromium. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/** Where the browser tests keep what they leave for people to look at (screenshots); gitignored. */
export const ARTIFACTS_DIR = join(ROOT, "test-artifacts");

/** For `describe(name, { skip: browserSkip }, ...)`: false when Chromium is there or required. */
export const browserSkip: false | string =
  existsSync(CHROMIUM_PATH) || process.env["REQUIRE_SERVICES"] === "1"
    ? false
    : `chromium is not installed at ${CHROMIUM_PATH} (apt-get install chromium; .ci/run installs it); set REQUIRE_SERVICES=1 to fail instead`;

/** The widths the pages are checked and photographed at. */
export const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
} as const;

/**
 * Starts headless Chromium with nothing running in the background (no
 * component updates, no safe-browsing lists), so that every request it makes
 * is one a page asked for.
 * @throws {Error} when Chromium is missing (under REQUIRE_SERVICES=1 that fails the test)
 */
export function launchBrowser(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Cannot start the browser tests: ${CHROMIUM_PATH} is missing (apt-get install chromium)`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-background-networking"],
  });
}

/**
 * Records the URL of every request a page makes (documents, scripts, styles,
 * images, fetches, downloads), from now on.
 * @param page the page
 * @returns the URLs so far, growing as the page asks for more
 */
export function recordRequests(page: Page): readonly string[] {
  const urls: string[] = [];
  page.on("request", (request) => urls.push(request.url()));
  return urls;
}

/**
 * The requests that went to an origin other than `origin`. `blob:` and
 * `data:` URLs count by the origin that made them (`blob:` names it; `data:`
 * never leaves the page).
 * @param urls what {@linkcode recordRequests} recorded
 * @param origin the server's origin, e.g. `http://127.0.0.1:41234`
 * @param allowed other origins the page may reach, e.g. a configured tile server
 */
export function foreignRequests(
  urls: readonly string[],
  origin: string,
  allowed: readonly string[] = [],
): string[] {
  return urls.filter((url) => {
    if (url.startsWith("data:")) return false;
    const inner = url.startsWith("blob:") ? url.slice("blob:".length) : url;
    const target = URL.parse(inner)?.origin;
    return target !== origin && !allowed.includes(target ?? "");
  });
}

/**
 * Saves a screenshot of the whole page under test-artifacts/.
 * @param page the page
 * @param name the file name without extension, e.g. `explorer-phone`
 * @returns the file's path
 */
export async function saveScreenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const path = join(ARTIFACTS_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/**
 * The directives of a Content-Security-Policy header, by name, each with its
 * sources in order.
 * @param header the header's value
 */
export function parseCsp(header: string): Map<string, string[]> {
  const directives = new Map<string, string[]>();
  for (const part of header.split(";")) {
    const [name, ...sources] = part.trim().split(/\s+/);
    if (name !== undefined && name !== "") directives.set(name.toLowerCase(), sources);
  }
  return directives;
}

/** Options of {@linkcode contentSecurityPolicy}. */
export interface ContentSecurityPolicyOptions {
  /**
   * Origins images may come from besides the page's own, e.g. a map tile server.
   * @default none
   */
  readonly imgSrc?: readonly string[];
  /**
   * Allow `data:` images too, e.g. a page's empty favicon (`<link rel="icon"
   * href="data:,">`, which spares the browser asking for `/favicon.ico`).
   * @default {false}
   */
  readonly dataImages?: boolean;
  /**
   * Origins scripts may send requests to besides the page's own.
   * @default none
   */
  readonly connectSrc?: readonly string[];
  /**
   * Let scripts set HTML only through Trusted Types, which a page that builds
   * its DOM with `createElement` and `textContent` never needs: an injected
   * string can then never become markup.
   * @default {false}
   */
  readonly requireTrustedTypes?: boolean;
}

/**
 * The Content-Security-Policy of a page the server serves: nothing by
 * default, scripts and styles from the page's own origin only (so no inline
 * script, no inline style attribute, no third-party origin), requests to the
 * own origin only, no framing, no `<base>`, forms posted nowhere else.
 * @param options extra image and request origins, `data:` images; Trusted Types
 * @returns the header's value
 * @throws {TypeError} when an extra origin is not an `https:` or `http:` origin
 * @example
 * ```ts
 * contentSecurityPolicy(); // "default-src 'none'; script-src 'self'; style-src 'self'; ..."
 * ```
 */
export function contentSecurityPolicy(options: ContentSecurityPolicyOptions = {}): string {
  const directives = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${
      sources("images from", options.imgSrc, options.dataImages === true ? ["data:"] : [])
    }`,
    `connect-src ${sources("requests to", options.connectSrc)}`,
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ];
  if (options.requireTrustedTypes === true) {
    directives.push("require-trusted-types-for 'script'", "trusted-types 'none'");
  }
  return directives.join("; ");
}

/** `'self'`, the schemes given, and the origins given, each checked to be an origin. */
function sources(
  what: string,
  origins: readonly string[] = [],
  schemes: readonly string[] = [],
): string {
  const all = ["'self'", ...schemes];
  for (const source of origins) {
    const url = URL.parse(source);
    if (
      url === null || (url.protocol !== "https:" && url.protocol !== "http:") ||
      url.origin !== source.replace(/\/$/, "")
    ) {
      throw new TypeError(
        `Cannot allow ${what} to "${source}": give an origin such as https://tiles.example.org`,
      );
    }
    if (!all.includes(url.origin)) all.push(url.origin);
  }
  return all.join(" ");
}

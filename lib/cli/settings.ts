import { type ConfigOf, customSetting, textSetting } from "../config/mod.ts";

/**
 * The settings only the CLI reads, beside the server's own (which it reads
 * from the same variables): how the endpoint commands reach the running
 * server's relay API.
 */
export const CLI_SETTINGS = {
  serverUrl: customSetting<string | undefined>("TRIBUTARY_URL", {
    default: undefined,
    defaultText: "http(s)://HOST:PORT",
    accepts: "an http or https URL such as `http://127.0.0.1:8000`",
    doc:
      "the running server the endpoint commands call (`--server` overrides it); https when TLS_CERT_FILE is set",
    parse: (text) => {
      const url = URL.parse(text);
      if (
        url === null || (url.protocol !== "http:" && url.protocol !== "https:") ||
        url.search !== "" || url.hash !== ""
      ) {
        throw new RangeError(`current value is "${text}"`);
      }
      return url.href.replace(/\/+$/, "");
    },
  }),
  apiKey: textSetting("TRIBUTARY_API_KEY", {
    default: "",
    accepts: "a tenant's API key",
    doc:
      "the tenant's API key the endpoint commands send (`--api-key` overrides it; the variable keeps it out of the process list)",
  }),
} as const;

/** The CLI's own configuration. */
export type CliConfig = ConfigOf<typeof CLI_SETTINGS>;

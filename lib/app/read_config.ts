import { AUTH_SETTINGS } from "../auth/mod.ts";
import {
  choiceSetting,
  ConfigError,
  type ConfigOf,
  customSetting,
  type Environment,
  integerSetting,
  listSettings,
  readSettings,
  type Setting,
  textSetting,
} from "../config/mod.ts";
import { parseOrigin, parseTrustedProxies } from "../http/_internal.ts";
import { type TrustedProxies } from "../http/mod.ts";
import { RELAY_SETTINGS } from "../relay/mod.ts";
import { LOG_SETTINGS } from "../log/mod.ts";
import { STORAGE_SETTINGS } from "../storage/mod.ts";
import { SYNC_SETTINGS } from "../sync/mod.ts";
import { WATER_SETTINGS } from "../water/mod.ts";

/** Services an app can run. */
export const AVAILABLE_SERVICES = ["water", "sync", "relay"] as const;

/** A service name. */
export type ServiceName = (typeof AVAILABLE_SERVICES)[number];

/** The host's own settings: where it listens and what it serves. */
export const SERVER_SETTINGS = {
  port: integerSetting(["WEBHOOK_PORT", "PORT"], {
    default: 8000,
    min: 0,
    max: 65_535,
    doc: "port (0 picks a free one)",
  }),
  host: textSetting("HOST", {
    default: "127.0.0.1",
    accepts: "an address",
    doc: "address to listen on; `0.0.0.0` to serve other machines",
  }),
  services: customSetting<readonly ServiceName[]>("SERVICES", {
    default: AVAILABLE_SERVICES,
    defaultText: AVAILABLE_SERVICES.join(","),
    accepts: `comma-separated names: ${AVAILABLE_SERVICES.map((name) => `\`${name}\``).join(", ")}`,
    doc: "services to run (`sync` is the token and sync service)",
    parse: (text) => {
      const names = text.split(",").map((part) => part.trim()).filter((part) => part !== "");
      return names.map((name) => {
        const found = AVAILABLE_SERVICES.find((service) => service === name);
        if (found === undefined) throw new RangeError(`"${name}" is not available`);
        return found;
      });
    },
  }),
  publicUrl: customSetting<string | undefined>("PUBLIC_URL", {
    default: undefined,
    defaultText: "",
    accepts: "an origin such as `https://api.example.org` (scheme, host, optional port, no path)",
    doc:
      "origin for next links and the OAuth `issuer` (behind a proxy); default: the request's `Host`",
    parse: parseOrigin,
  }),
  tlsCertFile: textSetting("TLS_CERT_FILE", {
    default: "",
    accepts: "a PEM file",
    doc:
      "certificate chain; with `TLS_KEY_FILE`, the server speaks HTTPS with HTTP/2 (and HTTP/1.1 on the same port) instead of cleartext HTTP/1.1",
  }),
  tlsKeyFile: textSetting("TLS_KEY_FILE", {
    default: "",
    accepts: "a PEM file",
    doc: "the certificate's private key",
  }),
  compressAboveBytes: integerSetting("COMPRESS_ABOVE_BYTES", {
    default: 1024,
    min: 0,
    max: 2 ** 40,
    doc:
      "JSON and CSV bodies from this size on are sent `br` or `gzip` as `Accept-Encoding` asks (streams always); a value above `MAX_RESPONSE_BYTES` turns compression off",
  }),
  trustProxy: customSetting<TrustedProxies | undefined>("TRUST_PROXY", {
    default: undefined,
    defaultText: "",
    accepts: "comma-separated CIDRs, e.g. `10.0.0.0/8, 127.0.0.1`",
    doc:
      "proxies whose forwarding headers (`TRUST_PROXY_HEADERS`) count, for next links, the OAuth issuer and client-address throttles; from anyone else they are ignored",
    parse: (text) => (text.trim() === "" ? undefined : parseTrustedProxies(text)),
  }),
  trustProxyHeaders: choiceSetting("TRUST_PROXY_HEADERS", {
    choices: ["x-forwarded", "forwarded"] as const,
    default: "x-forwarded",
    doc:
      "the header family the trusted proxies write: `x-forwarded` (`X-Forwarded-For`, `-Proto`, `-Host`: nginx, HAProxy, cloud load balancers) or `forwarded` (RFC 7239); the other is ignored, since a proxy passes a client's copy of a header it does not write through",
  }),
} as const;

/**
 * Every setting of the app, one table per service: the source of
 * {@linkcode readConfig} and of the README's configuration table.
 */
export const APP_SETTINGS = {
  server: SERVER_SETTINGS,
  log: LOG_SETTINGS,
  storage: STORAGE_SETTINGS,
  water: WATER_SETTINGS,
  auth: AUTH_SETTINGS,
  sync: SYNC_SETTINGS,
  relay: RELAY_SETTINGS,
} as const;

/** The app's configuration: `config.server.port`, `config.relay.kafka.brokers`, ... */
export type Config = ConfigOf<typeof APP_SETTINGS>;

/**
 * Reads the configuration from environment variables, with safe defaults.
 * @param env the environment, e.g. `process.env`
 * @returns the configuration
 * @throws {ConfigError} naming the variable and what it accepts
 * @example
 * ```ts
 * const config = readConfig({ PORT: "8080", SERVICES: "water" });
 * config.server.port; // 8080
 * config.relay.kafka.brokers; // []
 * ```
 */
export function readConfig(env: Environment): Config {
  for (const [variable, instead] of Object.entries(REMOVED_SETTINGS)) {
    if (env[variable] !== undefined && env[variable] !== "") {
      throw new ConfigError(variable, `Cannot start: ${variable} is no longer read: ${instead}`);
    }
  }
  return readSettings(APP_SETTINGS, env);
}

/** Variables of earlier versions that are no longer read, and what replaced them: set, they stop the start rather than be ignored. */
const REMOVED_SETTINGS: Readonly<Record<string, string>> = {
  QUEUE_SNAPSHOT_FILE:
    "the memory queue keeps every accepted message in a journal in STATE_DIR (on disk before its 202, read back at start); unset it. A snapshot an earlier version saved is not imported: let that version drain its queue before upgrading",
};

/**
 * Every setting of the app, in the order the README lists them.
 * @returns the settings
 */
export function appSettings(): Setting<unknown>[] {
  return listSettings(APP_SETTINGS);
}

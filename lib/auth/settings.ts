import { type ConfigOf, customSetting, integerSetting, pathSetting } from "../config/mod.ts";

/** The token service's settings, read by `readSettings` from the environment. */
export const AUTH_SETTINGS = {
  clientsFile: pathSetting("CLIENTS_FILE", {
    default: "data/clients.json",
    accepts: "a file",
    doc:
      'OAuth clients: `[{"client_id", "client_secret"?, "grant_types", "scopes"}]`; a secret plain or `sha256:<64 hex>`, none for a public client; the default may be missing (no clients), a file set must be readable',
  }),
  accessTokenTtlSeconds: integerSetting("ACCESS_TOKEN_TTL_SECONDS", {
    default: 3600,
    min: 1,
    max: 366 * 24 * 3600,
    doc: "access-token lifetime",
  }),
  refreshTokenTtlSeconds: integerSetting("REFRESH_TOKEN_TTL_SECONDS", {
    default: 30 * 24 * 3600,
    min: 1,
    max: 10 * 366 * 24 * 3600,
    doc: "refresh-token lifetime (30 days), renewed by each refresh",
  }),
  refreshReuseIntervalSeconds: integerSetting("REFRESH_REUSE_INTERVAL_SECONDS", {
    default: 30,
    min: 0,
    max: 3600,
    doc:
      "a refresh token presented again this long after its rotation (a retry after a lost answer) gets a new pair of the same login; later, reuse revokes the login; 0 revokes at once",
  }),
  passwordHashCost: customSetting("PASSWORD_HASH_COST", {
    default: 16_384,
    defaultText: "16384",
    accepts: "a power of two from 2 to 1048576",
    doc: "scrypt cost N for new passwords",
    parse: (text) => {
      const value = /^[0-9]+$/.test(text) ? Number(text) : Number.NaN;
      if (
        !Number.isSafeInteger(value) || value < 2 || value > 2 ** 20 || (value & (value - 1)) !== 0
      ) {
        throw new RangeError(`current value is "${text}"`);
      }
      return value;
    },
  }),
  loginMaxFailures: integerSetting("LOGIN_MAX_FAILURES", {
    default: 5,
    min: 1,
    max: 1000,
    doc:
      "wrong passwords for one user name (or wrong secrets for one OAuth client) from one client address within 15 minutes before that pair's attempts wait (1 s, doubling with each further failure); the name's owner elsewhere is not slowed",
  }),
  loginMaxFailuresPerName: integerSetting("LOGIN_MAX_FAILURES_PER_NAME", {
    default: 10,
    min: 0,
    max: 1_000_000,
    doc:
      "wrong passwords for one user name (or wrong secrets for one OAuth client) from every address it has not logged in from within 30 days, within 15 minutes, before attempts from such addresses wait, growing likewise; addresses where it logged in are never slowed by them; 0 for none",
  }),
  loginMaxFailuresPerAddress: integerSetting("LOGIN_MAX_FAILURES_PER_ADDRESS", {
    default: 20,
    min: 0,
    max: 1_000_000,
    doc:
      "wrong passwords and client secrets from one client address within 15 minutes before its attempts wait, growing likewise; 0 for none (behind a proxy every client shares its address)",
  }),
} as const;

/** The token service's configuration. */
export type AuthConfig = ConfigOf<typeof AUTH_SETTINGS>;

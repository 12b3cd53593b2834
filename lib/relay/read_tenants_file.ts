import { describeJsonError } from "../config/_internal.ts";
import { parseApiKey } from "../http/mod.ts";
import { RelayError } from "./errors.ts";
import type { TenantRegistry } from "./tenants.ts";

const TENANT_FIELDS = new Set(["id", "api_keys", "endpoints"]);

/**
 * Loads a tenants file into a registry: `{"tenants": [{"id", "api_keys":
 * [...], "endpoints": [...]}]}`, where an API key is plain or
 * `sha256:<64 hex digits>` and an endpoint is
 * `{"id", "url", "events", "secret", "public_key"?, "rate_limit_per_second"?, "enabled"?}`.
 * Everything is checked before anything is used; unknown fields are refused.
 * @param registry an empty registry
 * @param text the file's text
 * @param source the file's name, for messages
 * @returns the plain API keys found, by tenant (for the start-up banner)
 * @throws {RelayError} `ERR_RELAY_INVALID_TENANTS` or `ERR_RELAY_INVALID_ENDPOINT` naming the file and the field
 */
export function readTenantsFile(
  registry: TenantRegistry,
  text: string,
  source: string,
): Map<string, string[]> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw invalid(source, `it is not JSON (${describeJsonError(text, error)})`);
  }
  const tenants = (parsed as { tenants?: unknown } | null)?.tenants;
  if (
    typeof parsed !== "object" || parsed === null || Array.isArray(parsed) ||
    !Array.isArray(tenants)
  ) {
    throw invalid(source, 'it must be an object {"tenants": [...]}');
  }
  for (const key of Object.keys(parsed)) {
    if (key !== "tenants") {
      throw invalid(source, `field "${key}" is unknown; the file holds only "tenants"`);
    }
  }
  const plain = new Map<string, string[]>();
  for (const [i, entry] of tenants.entries()) {
    const field = `tenants[${i}]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw invalid(source, `${field} must be an object`);
    }
    const tenant = entry as Record<string, unknown>;
    for (const key of Object.keys(tenant)) {
      if (!TENANT_FIELDS.has(key)) {
        throw invalid(
          source,
          `${field}.${key} is unknown; a tenant has id, api_keys and endpoints`,
        );
      }
    }
    const id = tenant["id"];
    if (typeof id !== "string") throw invalid(source, `${field}.id must be a string`);
    const keys = tenant["api_keys"];
    if (!Array.isArray(keys) || keys.length === 0 || keys.some((key) => typeof key !== "string")) {
      throw invalid(
        source,
        `${field}.api_keys must be a non-empty list of strings (plain keys or "sha256:<hex>")`,
      );
    }
    const hashes = (keys as string[]).map((key, k) => {
      try {
        return parseApiKey(`${id}[${k}]`, key).hash;
      } catch (error) {
        throw invalid(source, `${field}.api_keys[${k}] is not usable: ${(error as Error).message}`);
      }
    });
    try {
      registry.addTenant(id, hashes);
    } catch (error) {
      throw invalid(source, `${field}: ${(error as Error).message}`);
    }
    plain.set(id, (keys as string[]).filter((key) => !key.startsWith("sha256:")));
    const endpoints = tenant["endpoints"] ?? [];
    if (!Array.isArray(endpoints)) throw invalid(source, `${field}.endpoints must be a list`);
    for (const [e, endpoint] of endpoints.entries()) {
      const where = `${field}.endpoints[${e}]`;
      if (typeof endpoint === "object" && endpoint !== null && !("secret" in endpoint)) {
        throw invalid(
          source,
          `${where}.secret is required in the file (a "whsec_" secret), so that signatures survive a restart`,
        );
      }
      try {
        registry.createEndpoint(id, endpoint, where);
      } catch (error) {
        throw invalid(source, (error as Error).message);
      }
    }
  }
  return plain;
}

function invalid(source: string, why: string): RelayError {
  return new RelayError(
    "ERR_RELAY_INVALID_TENANTS",
    `Cannot load the tenants file ${source}: ${why}`,
  );
}

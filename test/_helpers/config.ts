import assert from "node:assert/strict";
import { ConfigError } from "../../lib/config/mod.ts";

/**
 * Asserts that `fn` throws a ConfigError whose `variable` is `variable` and
 * whose message contains `named` (the variable, or the file at fault).
 */
export function assertConfigError(fn: () => unknown, variable: string, named = variable): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    assert.equal(error.name, "ConfigError");
    assert.equal(error.code, "ERR_CONFIG_INVALID");
    assert.equal(error.variable, variable);
    assert.ok(error.message.includes(named), `message names ${named}: ${error.message}`);
    return true;
  });
}

/** A configuration value that cannot be used; `variable` names it. */
export class ConfigError extends Error {
  readonly code = "ERR_CONFIG_INVALID" as const;
  readonly variable: string;

  /**
   * Creates a configuration error.
   * @param variable the environment variable (or file) at fault
   * @param message what it accepts and what it holds
   */
  constructor(variable: string, message: string) {
    super(message);
    this.name = "ConfigError";
    this.variable = variable;
  }
}

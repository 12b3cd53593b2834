/**
 * Configuration as data: each service declares a table of settings (the
 * variables, what they accept, defaults and a line of documentation), read
 * from the environment into a typed, nested configuration, with errors that
 * name the variable. The README's configuration table is rendered from the
 * same tables.
 * @module
 */
export { ConfigError } from "./errors.ts";
export type { ConfigOf, Environment, Setting, SettingsTable } from "./types.ts";
export { listSettings, readSettings } from "./read_settings.ts";
export {
  choiceSetting,
  customSetting,
  integerSetting,
  listSetting,
  numberSetting,
  pathSetting,
  textSetting,
} from "./settings.ts";
export type {
  ChoiceSettingOptions,
  ConfigPath,
  CustomSettingOptions,
  IntegerSettingOptions,
  ListSettingOptions,
  NumberSettingOptions,
  PathSettingOptions,
  SettingDoc,
  TextSettingOptions,
} from "./settings.ts";
export { renderSettingsTable } from "./render_settings_table.ts";
export { redactUrl } from "./redact_url.ts";
export { readConfigFile, readConfigPath } from "./read_config_file.ts";

/**
 * What the package's other domains use of config and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { parseConfigJson } from "./parse_config_json.ts";
export { describeJsonError } from "./describe_json_error.ts";
export { jsonErrorPosition } from "./json_error_position.ts";

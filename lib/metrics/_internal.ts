/**
 * What the package's other domains use of metrics and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { METRICS_ROUTE_DOC } from "./create_metrics_handler.ts";

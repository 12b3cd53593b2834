/**
 * What the package's other domains use of odata and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { isCalendarDate } from "./parse_filter.ts";
export { evaluateLeaf, leafValues } from "./evaluate.ts";
export type { BoundLeaf } from "./evaluate.ts";
export { describeQueryOptions } from "./query_options.ts";
export { arithmetic, compareResultValues } from "./evaluate_apply.ts";
export { encodeQueryValue } from "./next_link.ts";

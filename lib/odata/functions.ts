/** A filter function's signature: argument types and result type. */
export interface FunctionSignature {
  /** Accepted type groups for each argument, in order. */
  readonly args: readonly ArgumentKind[];
  /** Trailing arguments that may be left out. */
  readonly optional: number;
  readonly returns: "boolean" | "string" | "integer" | "number";
}

/** What an argument must be. */
export type ArgumentKind = "string" | "integer" | "temporal" | "numeric";

/**
 * The filter functions the parser knows, by name. OData function names are
 * lower-case.
 */
export const FILTER_FUNCTIONS: ReadonlyMap<string, FunctionSignature> = new Map(
  [
    ["contains", { args: ["string", "string"], optional: 0, returns: "boolean" }],
    ["startswith", { args: ["string", "string"], optional: 0, returns: "boolean" }],
    ["endswith", { args: ["string", "string"], optional: 0, returns: "boolean" }],
    ["tolower", { args: ["string"], optional: 0, returns: "string" }],
    ["toupper", { args: ["string"], optional: 0, returns: "string" }],
    ["trim", { args: ["string"], optional: 0, returns: "string" }],
    ["length", { args: ["string"], optional: 0, returns: "integer" }],
    ["indexof", { args: ["string", "string"], optional: 0, returns: "integer" }],
    ["substring", { args: ["string", "integer", "integer"], optional: 1, returns: "string" }],
    ["concat", { args: ["string", "string"], optional: 0, returns: "string" }],
    ["year", { args: ["temporal"], optional: 0, returns: "integer" }],
    ["month", { args: ["temporal"], optional: 0, returns: "integer" }],
    ["day", { args: ["temporal"], optional: 0, returns: "integer" }],
    ["round", { args: ["numeric"], optional: 0, returns: "number" }],
    ["floor", { args: ["numeric"], optional: 0, returns: "number" }],
    ["ceiling", { args: ["numeric"], optional: 0, returns: "number" }],
  ] as const,
);

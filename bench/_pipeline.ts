// bench/pipeline's stages, its fixed answer and its table: what the bench and
// its servers (bench/_pipeline_server.ts) share, and the pure parts a test reads.

/**
 * The stages of the shared request path, each adding its piece to those before
 * it, in the order the table lists them: `bare` is plain node:http, the rest
 * the library's pieces composed as lib/app composes them.
 */
export const STAGES = [
  { name: "bare", label: "bare node:http" },
  { name: "adapter", label: "adapter alone" },
  { name: "router", label: "+ router" },
  { name: "metrics", label: "+ metrics" },
  { name: "request-id", label: "+ request id" },
  { name: "rate-limit", label: "+ rate limit and key" },
  { name: "access-log", label: "+ access log" },
  { name: "compression", label: "+ compression check" },
] as const;

/** A stage's name, as bench/_pipeline_server.ts takes it. */
export type StageName = (typeof STAGES)[number]["name"];

/** The fixed answer every stage sends: a small JSON body, below the compression threshold. */
export const BODY = new TextEncoder().encode(
  `${
    JSON.stringify({ value: [{ Id: 1, LocationId: 3, ResultValue: 7.25, ResultUnit: "mg/L" }] })
  }\n`,
);
export const CONTENT_TYPE = "application/json; charset=utf-8";
/** What the client asks for: bench/http's page, a route of the water service's table. */
export const PATH = `/v1/odata/v4/Observations?$top=100&$filter=${
  encodeURIComponent("LocationId eq 3")
}`;
/** The API key the client sends, and the stages' servers accept. */
export const API_KEY = "tributary-bench-key";

/**
 * Whether a stage's composition holds another stage's piece: each holds its
 * own and those of the stages before it.
 * @param stage the stage served
 * @param piece the stage whose piece is asked about
 * @returns true when `stage` is `piece` or comes after it
 */
export function includes(stage: StageName, piece: StageName): boolean {
  const at = (name: StageName): number => STAGES.findIndex((known) => known.name === name);
  return at(stage) >= at(piece);
}

/**
 * The order the stages take their turns in a round: each round starts at
 * another stage (three on from the last round's first) and every other round
 * goes backwards, so that none always runs first, last or after the same one.
 * @param round the round, from 0
 * @returns every stage's name once
 */
export function stageOrder(round: number): StageName[] {
  const count = STAGES.length;
  const first = (round * 3) % count;
  const step = round % 2 === 1 ? -1 : 1;
  return STAGES.map((_, i) => STAGES[(((first + step * i) % count) + count) % count]!.name);
}

/** A stage's medians, as the table shows them. */
export interface StageFigures {
  readonly label: string;
  /** Requests per second. */
  readonly rate: number;
  /** The server's CPU time per request, µs. */
  readonly cpuMicros: number;
}

/**
 * The table of the stages: rate, the server's CPU time per request, what
 * each stage adds to the one before, and its rate over the first (bare).
 * Columns are aligned, Markdown-style, so the table can be pasted as is.
 * @param stages the stages in order, bare first
 * @returns the table's lines
 */
export function formatStageTable(stages: readonly StageFigures[]): string[] {
  const bare = stages[0];
  if (bare === undefined) return [];
  const header = [
    "stage",
    "req/s",
    "server CPU µs/request",
    "+ µs over the previous stage",
    "rate / bare",
  ];
  const rows = stages.map((stage, i) => {
    const added = i === 0 ? "" : signed(stage.cpuMicros - stages[i - 1]!.cpuMicros);
    return [
      stage.label,
      Math.round(stage.rate).toLocaleString("en-US"),
      stage.cpuMicros.toFixed(1),
      added,
      (stage.rate / bare.rate).toFixed(3),
    ];
  });
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length))
  );
  // The stage's name left, the figures right.
  const line = (cells: readonly string[]): string =>
    `| ${
      cells.map((cell, column) =>
        column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)
      ).join(" | ")
    } |`;
  const rule = `| ${
    widths.map((width, column) => column === 0 ? "-".repeat(width) : `${"-".repeat(width - 1)}:`)
      .join(" | ")
  } |`;
  return [line(header), rule, ...rows.map(line)];
}

/** A difference with its sign, one decimal: `+3.2`, `-0.4`. */
function signed(micros: number): string {
  const text = micros.toFixed(1);
  return micros >= 0 || text === "-0.0" ? `+${text.replace("-", "")}` : text;
}

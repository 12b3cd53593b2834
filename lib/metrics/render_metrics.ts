import type { MetricsRegistry } from "./metrics_registry.ts";
import type { MetricSnapshot } from "./types.ts";

/** The content type of the Prometheus text exposition format 0.0.4. */
export const METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

/**
 * Renders every metric of a registry in the Prometheus text exposition format
 * 0.0.4: `# HELP` and `# TYPE` lines, then one line per series; histograms as
 * cumulative `_bucket{le="…"}` lines ending in `le="+Inf"`, then `_sum` and
 * `_count`.
 * @param registry the registry to render
 * @returns the exposition text, ending in a newline (empty for an empty registry)
 * @throws {MetricsError} when a `collect` callback returns bad or repeated labels
 * @example
 * ```ts
 * const body = renderMetrics(registry);
 * const response = { status: 200, headers: { "content-type": METRICS_CONTENT_TYPE }, body };
 * ```
 */
export function renderMetrics(registry: MetricsRegistry): string {
  let text = "";
  for (const metric of registry.snapshot()) text += renderSnapshot(metric);
  return text;
}

function renderSnapshot(metric: MetricSnapshot): string {
  const name = metric.name;
  let text = `# HELP ${name} ${escapeHelp(metric.help)}\n# TYPE ${name} ${metric.kind}\n`;
  switch (metric.kind) {
    case "counter":
    case "gauge":
      for (const sample of metric.samples) {
        const pairs = labelPairs(metric.labelNames, sample.labelValues);
        text += `${name}${pairs === "" ? "" : `{${pairs}}`} ${formatValue(sample.value)}\n`;
      }
      return text;
    case "histogram": {
      const bounds = [...metric.buckets.map((bound) => `le="${formatValue(bound)}"`), 'le="+Inf"'];
      for (const series of metric.series) {
        const pairs = labelPairs(metric.labelNames, series.labelValues);
        const labels = pairs === "" ? "" : `{${pairs}}`;
        const prefix = pairs === "" ? `${name}_bucket{` : `${name}_bucket{${pairs},`;
        const count = formatValue(series.count);
        for (let i = 0; i < bounds.length; i++) {
          const cumulative = series.bucketCounts[i];
          const value = cumulative === undefined ? count : formatValue(cumulative);
          text += `${prefix}${bounds[i]!}} ${value}\n`;
        }
        text += `${name}_sum${labels} ${formatValue(series.sum)}\n`;
        text += `${name}_count${labels} ${count}\n`;
      }
      return text;
    }
    default: {
      const unknown: never = metric;
      throw new TypeError(`Cannot render a metric: unknown kind ${JSON.stringify(unknown)}`);
    }
  }
}

/** `a="x",b="y"` with the values escaped; empty without labels. */
function labelPairs(names: readonly string[], values: readonly string[]): string {
  let text = "";
  for (let i = 0; i < names.length; i++) {
    if (i > 0) text += ",";
    text += `${names[i]}="${escapeLabelValue(values[i]!)}"`;
  }
  return text;
}

function escapeHelp(text: string): string {
  return text.replace(/[\\\n]/g, escapeChar);
}

function escapeLabelValue(text: string): string {
  return text.replace(/[\\\n"]/g, escapeChar);
}

function escapeChar(char: string): string {
  return char === "\n" ? "\\n" : `\\${char}`;
}

/** A sample value as Go's `ParseFloat` reads it: `+Inf`, `-Inf`, `NaN` or a decimal. */
function formatValue(value: number): string {
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

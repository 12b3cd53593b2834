// The water-data explorer's time series: a reading's time, round ticks for
// the value and calendar ticks for the time, the layout of a series on a
// plot, and the drawing of it in the page's SVG. The pure part is exported
// for the browser test.

import { type Drawing, type DrawingShape, drawingSize, svg } from "./drawing.browser.ts";

/** One reading of a series: its time (ms since the epoch, as if UTC) and value. */
export interface SeriesPoint {
  readonly time: number;
  readonly value: number;
}

/**
 * A reading's time from its date and (optional) time of day, as written in
 * the data; the time zone is left aside, as a plot of one location needs.
 * @param date `YYYY-MM-DD`
 * @param time `HH:MM` or `HH:MM:SS`, or nothing
 * @returns milliseconds, or undefined when the date is not one
 */
export function readingTime(date: unknown, time: unknown): number | undefined {
  if (typeof date !== "string") return undefined;
  const day = /^(\d{4})-(\d{2})-(\d{2})$/.exec(date);
  if (day === null) return undefined;
  const clock = typeof time === "string" ? /^(\d{1,2}):(\d{2})(?::(\d{2}))?/.exec(time) : null;
  return Date.UTC(
    Number(day[1]),
    Number(day[2]) - 1,
    Number(day[3]),
    clock === null ? 0 : Number(clock[1]),
    clock === null ? 0 : Number(clock[2]),
    clock?.[3] === undefined ? 0 : Number(clock[3]),
  );
}

/**
 * Round numbers between two values for an axis: a step of 1, 2 or 5 times a
 * power of ten, giving at most about `count` ticks.
 * @param min the lowest value
 * @param max the highest value
 * @param count ticks wanted
 */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [];
  if (min === max) return [min];
  const raw = (max - min) / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const step =
    [1, 2, 5, 10].map((factor) => factor * power).find((candidate) => candidate >= raw) ??
      10 * power;
  const ticks: number[] = [];
  for (let value = Math.ceil(min / step) * step; value <= max + step * 1e-9; value += step) {
    ticks.push(Number(value.toPrecision(12)));
  }
  return ticks;
}

/** A tick of the time axis: where, and its label. */
export interface TimeTick {
  readonly time: number;
  readonly label: string;
}

const MONTH_STEPS = [1, 3, 6] as const;
const YEAR_STEPS = [1, 2, 5, 10, 20, 50] as const;

/**
 * Calendar ticks between two times: days, months or years, whichever gives
 * at most about `count`, labelled `YYYY`, `YYYY-MM` or `YYYY-MM-DD`.
 * @param start the first time, ms
 * @param end the last time, ms
 * @param count ticks wanted
 */
export function timeTicks(start: number, end: number, count = 6): TimeTick[] {
  const first = new Date(start);
  const days = (end - start) / 86_400_000;
  const years = days / 365.25;
  if (years / 1 > count || days > 366 * 2) {
    const step = YEAR_STEPS.find((candidate) => years / candidate <= count) ?? 100;
    const ticks: TimeTick[] = [];
    for (let year = Math.ceil(first.getUTCFullYear() / step) * step;; year += step) {
      const time = Date.UTC(year, 0, 1);
      if (time > end) break;
      if (time >= start) ticks.push({ time, label: String(year) });
    }
    return ticks;
  }
  const months = days / 30.44;
  if (months > count / 2 || days > 62) {
    const step = MONTH_STEPS.find((candidate) => months / candidate <= count) ?? 12;
    const ticks: TimeTick[] = [];
    for (let index = first.getUTCFullYear() * 12 + first.getUTCMonth();; index++) {
      const year = Math.floor(index / 12);
      const month = index % 12;
      const time = Date.UTC(year, month, 1);
      if (time > end) break;
      if (time >= start && month % step === 0) {
        ticks.push({ time, label: `${year}-${pad(month + 1)}` });
      }
    }
    return ticks;
  }
  const step = Math.max(1, Math.ceil(days / count));
  const ticks: TimeTick[] = [];
  const day0 = Date.UTC(first.getUTCFullYear(), first.getUTCMonth(), first.getUTCDate());
  for (let time = day0 < start ? day0 + 86_400_000 : day0; time <= end; time += step * 86_400_000) {
    const date = new Date(time);
    ticks.push({
      time,
      label: `${date.getUTCFullYear()}-${pad(date.getUTCMonth() + 1)}-${pad(date.getUTCDate())}`,
    });
  }
  return ticks;
}

function pad(value: number): string {
  return String(value).padStart(2, "0");
}

/** A series laid out on a plot: its points in pixels and its axes' ticks. */
export interface SeriesLayout {
  readonly points: readonly { readonly x: number; readonly y: number }[];
  readonly xTicks: readonly { readonly x: number; readonly label: string }[];
  readonly yTicks: readonly { readonly y: number; readonly label: string }[];
  readonly min: number;
  readonly max: number;
}

/** The plot's frame: its size and the margins that hold the axes. */
export interface PlotFrame {
  readonly width: number;
  readonly height: number;
  readonly left: number;
  readonly right: number;
  readonly top: number;
  readonly bottom: number;
}

/**
 * Lays a series out on a plot: time across, value up, both with round ticks.
 * @param series the readings, in any order (they are drawn by time)
 * @param frame the plot's size and margins
 */
export function layOutSeries(series: readonly SeriesPoint[], frame: PlotFrame): SeriesLayout {
  const sorted = [...series].sort((a, b) => a.time - b.time);
  if (sorted.length === 0) return { points: [], xTicks: [], yTicks: [], min: NaN, max: NaN };
  const start = sorted[0]!.time;
  const end = sorted[sorted.length - 1]!.time;
  let min = Infinity, max = -Infinity;
  for (const point of sorted) {
    min = Math.min(min, point.value);
    max = Math.max(max, point.value);
  }
  const yTickValues = niceTicks(min, max, 5);
  const low = Math.min(min, yTickValues[0] ?? min);
  const high = Math.max(max, yTickValues[yTickValues.length - 1] ?? max);
  const spanT = end - start || 86_400_000;
  const spanV = high - low || 1;
  const innerWidth = frame.width - frame.left - frame.right;
  const innerHeight = frame.height - frame.top - frame.bottom;
  const x = (time: number): number =>
    frame.left + (end === start ? innerWidth / 2 : ((time - start) / spanT) * innerWidth);
  const y = (value: number): number =>
    frame.top + (high === low ? innerHeight / 2 : (1 - (value - low) / spanV) * innerHeight);
  return {
    points: sorted.map((point) => ({ x: x(point.time), y: y(point.value) })),
    xTicks: timeTicks(start, end, Math.max(2, Math.floor(innerWidth / 110))).map((tick) => ({
      x: x(tick.time),
      label: tick.label,
    })),
    yTicks: yTickValues.map((value) => ({ y: y(value), label: String(value) })),
    min,
    max,
  };
}

// --- The drawing ---------------------------------------------------------------

/** The plot's height for its width. */
const PLOT_SHAPE: DrawingShape = {
  aspect: 0.4,
  minHeight: 220,
  maxHeight: 320,
  fallbackWidth: 800,
};
/** The plot's margins, which hold its axes' labels. */
const PLOT_MARGIN = { left: 56, right: 14, top: 20, bottom: 34 } as const;

/** A series to plot: its readings, their units, and what it is of (e.g. `pH at Lake A`). */
export interface Series {
  readonly points: readonly SeriesPoint[];
  readonly units: readonly string[];
  readonly title: string;
  /**
   * What its points are, in the description (e.g. `yearly means`).
   * @default {"readings"}
   */
  readonly noun?: string;
}

/**
 * Shows the plot and draws a series on it at its width on the page: the
 * axes with their ticks, the unit when there is one, the line and a
 * `circle.point` per reading; its description says what is drawn, and its
 * `data-points` how many readings.
 * @param plot the drawing
 * @param series what to draw
 * @returns the width it was drawn at, in CSS pixels
 */
export function drawSeries(plot: Drawing, series: Series): number {
  const { points, units, title } = series;
  const noun = series.noun ?? "readings";
  // Shown first, so that its width on the page can be read.
  plot.svg.removeAttribute("hidden");
  const size = drawingSize(plot.svg, PLOT_SHAPE);
  const frame: PlotFrame = { ...size, ...PLOT_MARGIN };
  plot.svg.setAttribute("viewBox", `0 0 ${size.width} ${size.height}`);
  const layout = layOutSeries(points, frame);
  const parts: SVGElement[] = [];
  const axes = svg("g", { class: "axes" });
  const bottom = frame.height - frame.bottom;
  axes.append(
    svg("line", { x1: frame.left, y1: bottom, x2: frame.width - frame.right, y2: bottom }),
  );
  axes.append(svg("line", { x1: frame.left, y1: frame.top, x2: frame.left, y2: bottom }));
  for (const tick of layout.xTicks) {
    axes.append(svg("line", { class: "tick", x1: tick.x, y1: bottom, x2: tick.x, y2: bottom + 5 }));
    axes.append(svg("text", { x: tick.x, y: bottom + 20, "text-anchor": "middle" }, tick.label));
  }
  for (const tick of layout.yTicks) {
    axes.append(
      svg("line", {
        class: "grid",
        x1: frame.left,
        y1: tick.y,
        x2: frame.width - frame.right,
        y2: tick.y,
      }),
    );
    axes.append(
      svg("text", { x: frame.left - 6, y: tick.y + 4, "text-anchor": "end" }, tick.label),
    );
  }
  if (units.length === 1) {
    axes.append(svg("text", { x: frame.left + 4, y: frame.top - 6, class: "unit" }, units[0]!));
  }
  parts.push(axes);
  if (layout.points.length > 1) {
    parts.push(
      svg("polyline", {
        class: "line",
        points: layout.points.map((point) => `${point.x.toFixed(1)},${point.y.toFixed(1)}`).join(
          " ",
        ),
      }),
    );
  }
  const dots = svg("g", { class: "points" });
  for (const point of layout.points) {
    dots.append(
      svg("circle", { class: "point", cx: point.x.toFixed(1), cy: point.y.toFixed(1), r: 2.5 }),
    );
  }
  parts.push(dots);
  plot.description.textContent = points.length === 0
    ? `No ${noun} of ${title}.`
    : `${points.length} ${noun} of ${title}, from ${layout.min} to ${layout.max}${
      units.length === 1 ? ` ${units[0]}` : ""
    }.`;
  plot.svg.replaceChildren(plot.description, ...parts);
  plot.svg.setAttribute("data-points", String(points.length));
  return size.width;
}

/**
 * Empties the plot and hides it.
 * @param plot the drawing
 */
export function clearSeries(plot: Drawing): void {
  plot.description.textContent = "No series.";
  plot.svg.replaceChildren(plot.description);
  plot.svg.removeAttribute("data-points");
  plot.svg.setAttribute("hidden", "");
}

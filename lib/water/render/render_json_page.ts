import type { Deadline } from "../../http/mod.ts";
import { WaterError } from "../errors.ts";
import { type RenderCache, type RenderedRow, renderKey } from "./render_cache.ts";
import type { RowWriter } from "./render_rows.ts";
import type { ScratchBuffers } from "./scratch_buffers.ts";

/** What rendering a JSON page uses: the render cache, the byte limit, scratch buffers. */
export interface JsonPageSettings {
  /** Largest page, in bytes; a larger one is refused. */
  readonly maxBytes: number;
  readonly cache: RenderCache;
  /** Where the slices of pages compressed as they render are written. */
  readonly scratch: ScratchBuffers;
}

const encoder = new TextEncoder();

/** Rows of a page rendered together when the page is compressed as it renders (about 1 MB of observations). */
export const SLICE_ROWS = 1000;
/**
 * Pages of up to this many rows keep their rendered rows in the render
 * cache; bigger ones (downloads, each page seen once) only read it, so that
 * paging through a dataset leaves the rows of small, repeated pages cached.
 */
const CACHED_PAGE_ROWS = SLICE_ROWS;

/**
 * A JSON page in parts made on demand, for `compressParts`: a page
 * none of whose rows is cached is rendered {@linkcode SLICE_ROWS} rows at a
 * time into scratch buffers (given back by whoever reads the slices; its rows
 * not cached, as for any big page), so that compressing one slice overlaps
 * rendering the next; a page with cached rows is put together as
 * {@linkcode renderJsonPage} does. The byte limit and the deadline are
 * checked after each slice.
 * @param rows the page's rows
 * @param writer the selection's row writer
 * @param selection the selection's number in the render cache
 * @param settings the cache, byte limit and scratch buffers
 * @param head the page's opening bytes
 * @param tail the page's closing text
 * @param deadline checked as the page renders
 * @returns the page's parts, made as they are asked for
 * @throws {WaterError} `ERR_WATER_RESPONSE_TOO_LARGE` past the byte limit
 */
export function* jsonPageParts(
  rows: readonly number[],
  writer: RowWriter,
  selection: number,
  settings: JsonPageSettings,
  head: Uint8Array,
  tail: string,
  deadline: Deadline,
): Generator<Uint8Array, void, undefined> {
  const found = cachedRows(rows, selection, settings, deadline);
  if (found.hits > 0) {
    const body = renderJsonPage(rows, writer, selection, settings, head, tail, deadline, found);
    yield* body instanceof Uint8Array ? [body] : body;
    return;
  }
  const end = encoder.encode(tail);
  let total = 0;
  for (let from = 0; from < rows.length; from += SLICE_ROWS) {
    const to = Math.min(rows.length, from + SLICE_ROWS);
    const scratch = settings.scratch.take();
    const { block } = writer.jsonBytes(
      rows.slice(from, to),
      from === 0 ? head : COMMA_BYTES,
      to === rows.length ? end : EMPTY,
      scratch,
    );
    // Rows that did not fit were written elsewhere: the scratch buffer goes back at once.
    if (block.buffer !== scratch.buffer) settings.scratch.give(scratch);
    total += block.length;
    try {
      if (total > settings.maxBytes) throw tooLarge(settings.maxBytes);
      deadline.check();
    } catch (error) {
      settings.scratch.give(block);
      throw error;
    }
    yield block;
  }
}

const COMMA = 0x2c;
const COMMA_BYTES = Uint8Array.of(COMMA);
const EMPTY = new Uint8Array(0);
/** Runs sent as separate parts before joining them is cheaper. */
const MAX_PARTS = 4;

/**
 * Renders a JSON page from cached or freshly rendered rows, refusing one
 * above the byte limit. A page none of whose rows is cached (a client
 * downloading a dataset sees each page once) is rendered as one block,
 * head and tail included, and sent as it is. Otherwise rows missing from
 * the cache are rendered in runs into one block, comma-separated, and
 * cached as views into it; rows that are neighbours in a block are then
 * copied in one go, so a page of consecutive rows (a location's, say)
 * costs one copy.
 * @param rows the page's rows
 * @param writer the selection's row writer
 * @param selection the selection's number in the render cache
 * @param settings the cache and byte limit
 * @param head the page's opening bytes
 * @param tail the page's closing text
 * @param deadline checked as the cache is looked in
 * @param found the page's rows found in the cache, when looked for already
 * @returns the page: one block, or parts to send one after another
 * @throws {WaterError} `ERR_WATER_RESPONSE_TOO_LARGE` past the byte limit
 */
export function renderJsonPage(
  rows: readonly number[],
  writer: RowWriter,
  selection: number,
  settings: JsonPageSettings,
  head: Uint8Array,
  tail: string,
  deadline: Deadline,
  found: CachedRows = cachedRows(rows, selection, settings, deadline),
): Uint8Array | Uint8Array[] {
  const caching = settings.cache.maxBytes > 0;
  const { views, hits } = found;
  const end = encoder.encode(tail);
  // A big page (a download, seen once) reads cached rows but adds none: it would push out the rows small pages come back for.
  const keeping = caching && rows.length <= CACHED_PAGE_ROWS;
  if (hits === 0) {
    const { block, starts, ends } = writer.jsonBytes(rows, head, end);
    if (block.length > settings.maxBytes) throw tooLarge(settings.maxBytes);
    if (keeping) {
      for (let k = 0; k < rows.length; k++) {
        settings.cache.set(renderKey(selection, rows[k]!), {
          block,
          start: starts[k]!,
          end: ends[k]!,
        });
      }
    }
    return block;
  }
  let missing: number[] = [];
  const flush = (): void => {
    if (missing.length === 0) return;
    renderRun(missing, rows, views, writer, selection, keeping ? settings.cache : undefined);
    missing = [];
  };
  for (let i = 0; i < rows.length; i++) {
    if (views[i] === undefined) {
      missing.push(i);
    } else {
      flush();
    }
  }
  flush();
  // Merge neighbours: a row that starts one comma after the previous one ends,
  // in the same block, extends the run.
  const runs: Uint8Array[] = [];
  let total = head.length;
  let block: Uint8Array | undefined;
  let from = 0;
  let to = 0;
  for (const view of views) {
    if (view.block === block && view.start === to + 1) {
      to = view.end;
      continue;
    }
    if (block !== undefined) runs.push(block.subarray(from, to));
    block = view.block;
    from = view.start;
    to = view.end;
  }
  if (block !== undefined) runs.push(block.subarray(from, to));
  for (const part of runs) total += part.length + 1;
  total += end.length - (runs.length > 0 ? 1 : 0);
  if (total > settings.maxBytes) throw tooLarge(settings.maxBytes);
  if (runs.length <= MAX_PARTS) {
    // Few runs (a page of consecutive rows is one): send them as they are.
    const parts: Uint8Array[] = [head];
    runs.forEach((part, i) => {
      if (i > 0) parts.push(COMMA_BYTES);
      parts.push(part);
    });
    parts.push(end);
    return parts;
  }
  const out = new Uint8Array(total);
  out.set(head);
  let at = head.length;
  for (let i = 0; i < runs.length; i++) {
    if (i > 0) out[at++] = COMMA;
    out.set(runs[i]!, at);
    at += runs[i]!.length;
  }
  out.set(end, at);
  return [out];
}

/** The rows of a page found in the render cache: a view for each (undefined where missing; read only when `hits` > 0), and how many. */
export interface CachedRows {
  readonly views: RenderedRow[];
  readonly hits: number;
}

/** No row found: nothing reads the views then. */
const NONE_CACHED: CachedRows = { views: [], hits: 0 };

/**
 * Looks a page's rows up in the render cache (none when it is off), checking
 * the deadline as it goes. The views are made on the first row found: a cold
 * page (a download's, most often) allocates nothing here.
 */
function cachedRows(
  rows: readonly number[],
  selection: number,
  settings: JsonPageSettings,
  deadline: Deadline,
): CachedRows {
  if (settings.cache.maxBytes <= 0) return NONE_CACHED;
  let views: RenderedRow[] | undefined;
  let hits = 0;
  for (let i = 0; i < rows.length; i++) {
    const cached = settings.cache.get(renderKey(selection, rows[i]!));
    if (cached !== undefined) {
      (views ??= new Array(rows.length))[i] = cached;
      hits++;
    }
    if ((i & 1023) === 1023) deadline.check();
  }
  return views === undefined ? NONE_CACHED : { views, hits };
}

/** Renders rows `rows[indexes[..]]` into one comma-separated block, a view per row (kept in the cache, when given). */
function renderRun(
  indexes: readonly number[],
  rows: readonly number[],
  views: RenderedRow[],
  writer: RowWriter,
  selection: number,
  cache: RenderCache | undefined,
): void {
  // The run's rows straight into one block of bytes, comma-separated, each row a view into it.
  const { block, starts, ends } = writer.jsonBytes(indexes.map((i) => rows[i]!));
  for (let k = 0; k < indexes.length; k++) {
    const view: RenderedRow = { block, start: starts[k]!, end: ends[k]! };
    views[indexes[k]!] = view;
    cache?.set(renderKey(selection, rows[indexes[k]!]!), view);
  }
}

function tooLarge(maxBytes: number): WaterError {
  return new WaterError(
    "ERR_WATER_RESPONSE_TOO_LARGE",
    `Cannot send the result: it is larger than ${maxBytes} bytes; lower $top or select fewer fields`,
  );
}

// The water-data explorer's table of observations: a page of rows at a time,
// Next following the API's next link and Previous asking again for the page
// before, with where the rows stand in the whole count.

import { displayUnit, followLink, type ObservationRow, type Page } from "./query.browser.ts";

/** The table's elements: its body, its two buttons and the line that says which rows it shows. */
export interface TableElements {
  readonly rows: HTMLTableSectionElement;
  readonly previous: HTMLButtonElement;
  readonly next: HTMLButtonElement;
  readonly info: HTMLElement;
}

/** Options of {@linkcode ObservationTable}. */
export interface ObservationTableOptions {
  /** Reads a page of observations from the API, by its path. */
  readonly read: (path: string, signal: AbortSignal) => Promise<Page<ObservationRow>>;
  /** A location's name, for the rows' location column. */
  readonly locationName: (id: number) => string;
  /** Rows a page holds (the query's `$top`), to number them. */
  readonly pageSize: number;
}

/**
 * A number as the page writes it, e.g. `12,345`.
 * @param value the number
 */
export function formatNumber(value: number): string {
  return value.toLocaleString("en-CA");
}

/** The table of a selection's observations, paged by the API's next links. */
export class ObservationTable {
  readonly #elements: TableElements;
  readonly #options: ObservationTableOptions;
  /** The path of each page seen, the last one shown. */
  #paths: string[] = [];
  #next: string | undefined;
  #total = 0;

  /**
   * @param elements where it shows its rows and buttons
   * @param options how it reads a page; the locations' names; the page size
   */
  constructor(elements: TableElements, options: ObservationTableOptions) {
    this.#elements = elements;
    this.#options = options;
  }

  /**
   * Shows the first page of a query.
   * @param path the query of its first page
   * @param total how many rows the query has in all
   * @param signal what cancels it (a newer selection)
   */
  async first(path: string, total: number, signal: AbortSignal): Promise<void> {
    this.#paths = [];
    this.#total = total;
    await this.#show(path, signal);
  }

  /**
   * Shows the next page, or the one before; nothing when there is none.
   * @param forward the next page, or else the one before
   * @param signal what cancels it
   */
  async turn(forward: boolean, signal: AbortSignal): Promise<void> {
    let path: string | undefined;
    if (forward) {
      path = this.#next;
    } else {
      this.#paths.pop();
      path = this.#paths.pop();
    }
    if (path === undefined) return;
    this.#elements.previous.disabled = true;
    this.#elements.next.disabled = true;
    await this.#show(path, signal);
  }

  async #show(path: string, signal: AbortSignal): Promise<void> {
    const { rows, previous, next, info } = this.#elements;
    const page = await this.#options.read(path, signal);
    this.#paths.push(path);
    this.#next = followLink(page["@odata.nextLink"], location.origin);
    rows.replaceChildren(...page.value.map((row) => this.#row(row)));
    const first = (this.#paths.length - 1) * this.#options.pageSize;
    info.textContent = page.value.length === 0
      ? "No rows"
      : `Rows ${formatNumber(first + 1)}–${formatNumber(first + page.value.length)} of ${
        formatNumber(this.#total)
      }`;
    previous.disabled = this.#paths.length < 2;
    next.disabled = this.#next === undefined;
  }

  #row(row: ObservationRow): HTMLTableRowElement {
    const tr = document.createElement("tr");
    const cells = [
      String(row.Id),
      row.ActivityStartDate ?? "",
      row.ActivityStartTime ?? "",
      this.#options.locationName(row.LocationId),
      row.CharacteristicName ?? "",
      row.ResultValue === null ? "" : String(row.ResultValue),
      displayUnit(row.ResultUnit),
    ];
    cells.forEach((text, index) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (index === 5) td.className = "number";
      tr.append(td);
    });
    return tr;
  }
}

// Server-Sent Events read from text as it arrives, as the WHATWG HTML
// standard's "event stream interpretation" says: lines ended by CRLF, LF or
// CR (a CR at a chunk's end waits for the next chunk, which may start with
// its LF), a leading BOM dropped, comments, `field: value` with one space
// stripped, `data` lines joined, `id` kept across events (not when it holds
// a NUL), `retry` taken only as digits, an event dispatched at a blank line
// when it has data. Pure: the caller feeds the text.

/** What the parser gives, in order: events, reconnection times and comments. */
export type SseItem =
  | {
    readonly kind: "event";
    /** The last event id (this event's `id`, or the one before it). */
    readonly id: string;
    /** `event`, or `message` when none. */
    readonly event: string;
    readonly data: string;
  }
  | { readonly kind: "retry"; readonly ms: number }
  | { readonly kind: "comment"; readonly text: string };

/** An incremental event-stream parser. */
export class SseParser {
  #buffer = "";
  #started = false;
  #data: string[] = [];
  #event = "";
  #idBuffer: string;
  /** The last event id, as an EventSource keeps it (what `Last-Event-ID` resumes from). */
  lastEventId: string;

  /** @param lastEventId the id to start from (a resumed stream's) */
  constructor(lastEventId = "") {
    this.lastEventId = lastEventId;
    this.#idBuffer = lastEventId;
  }

  /**
   * Feeds text; gives what it completes.
   * @param text the next decoded chunk
   * @returns the items completed by it
   */
  push(text: string): SseItem[] {
    let buffer = this.#buffer + text;
    if (!this.#started && buffer !== "") {
      this.#started = true;
      if (buffer.startsWith("\uFEFF")) buffer = buffer.slice(1);
    }
    const items: SseItem[] = [];
    let start = 0;
    for (;;) {
      const end = lineEnd(buffer, start);
      if (end === -1) break;
      // A CR at the end: its LF may come with the next chunk.
      if (buffer[end] === "\r" && end === buffer.length - 1) break;
      this.#line(buffer.slice(start, end), items);
      start = end + (buffer[end] === "\r" && buffer[end + 1] === "\n" ? 2 : 1);
    }
    this.#buffer = buffer.slice(start);
    return items;
  }

  /**
   * The end of the stream: a CR left waiting ends its line; an event not
   * ended by a blank line is dropped, as the standard says.
   * @returns the items the last line completes
   */
  end(): SseItem[] {
    const items: SseItem[] = [];
    if (this.#buffer.endsWith("\r")) this.#line(this.#buffer.slice(0, -1), items);
    this.#buffer = "";
    this.#data = [];
    this.#event = "";
    return items;
  }

  #line(line: string, items: SseItem[]): void {
    if (line === "") {
      this.lastEventId = this.#idBuffer;
      if (this.#data.length > 0) {
        items.push({
          kind: "event",
          id: this.lastEventId,
          event: this.#event === "" ? "message" : this.#event,
          data: this.#data.join("\n"),
        });
      }
      this.#data = [];
      this.#event = "";
      return;
    }
    if (line.startsWith(":")) {
      items.push({ kind: "comment", text: line.slice(1).replace(/^ /, "") });
      return;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
    switch (field) {
      case "data":
        this.#data.push(value);
        break;
      case "event":
        this.#event = value;
        break;
      case "id":
        if (!value.includes("\0")) this.#idBuffer = value;
        break;
      case "retry":
        if (/^[0-9]+$/.test(value)) items.push({ kind: "retry", ms: Number(value) });
        break;
      default:
        // Other fields are ignored.
    }
  }
}

/** The index of the first CR or LF from `start`; -1 when there is none. */
function lineEnd(text: string, start: number): number {
  for (let i = start; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (char === 10 || char === 13) return i;
  }
  return -1;
}

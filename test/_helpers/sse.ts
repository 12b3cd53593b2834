// Reads a Server-Sent Events body as a client does: events (id, event, data)
// and comments, one at a time, as they arrive; a test waits on the next one
// instead of sleeping.

/** One thing a stream sent: an event, a comment (`: ping`), or a `retry:` line. */
export type SseItem =
  | { readonly kind: "event"; readonly id: string; readonly event: string; readonly data: string }
  | { readonly kind: "comment"; readonly text: string }
  | { readonly kind: "retry"; readonly ms: number };

export interface SseReader {
  /** The next item; undefined once the stream has ended. */
  next(): Promise<SseItem | undefined>;
  /** The next event, skipping comments and retry lines; undefined once the stream has ended. */
  nextEvent(): Promise<(SseItem & { kind: "event" }) | undefined>;
  /** Stops reading: the client goes away. */
  cancel(): Promise<void>;
}

/**
 * Reads a response's body as Server-Sent Events.
 * @param response a `text/event-stream` response
 * @returns the reader
 */
export function readSse(response: Response): SseReader {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const parse = (block: string): SseItem => {
    if (block.startsWith(":")) return { kind: "comment", text: block.slice(1).trim() };
    const fields = new Map<string, string>();
    for (const line of block.split("\n")) {
      const colon = line.indexOf(":");
      const name = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
      fields.set(
        name,
        fields.has(name) && name === "data" ? `${fields.get(name)}\n${value}` : value,
      );
    }
    if (fields.has("retry") && !fields.has("data")) {
      return { kind: "retry", ms: Number(fields.get("retry")) };
    }
    return {
      kind: "event",
      id: fields.get("id") ?? "",
      event: fields.get("event") ?? "message",
      data: fields.get("data") ?? "",
    };
  };
  async function next(): Promise<SseItem | undefined> {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        return parse(block);
      }
      const { done, value } = await reader.read();
      if (done) return undefined;
      buffer += decoder.decode(value, { stream: true });
    }
  }
  return {
    next,
    async nextEvent() {
      for (let item = await next(); item !== undefined; item = await next()) {
        if (item.kind === "event") return item;
      }
      return undefined;
    },
    cancel: () => reader.cancel(),
  };
}

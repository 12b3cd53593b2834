import { HttpError } from "./errors.ts";
import type { BodyReader } from "./types.ts";

/**
 * Builds a {@linkcode BodyReader} over a stream of chunks. A declared
 * `Content-Length` above the limit is refused before anything is read; a body
 * that grows past the limit is refused as soon as it does.
 * @param open opens the chunk stream (called at most once)
 * @param declaredLength the `Content-Length` header, if any
 * @returns the reader
 */
export function createBodyReader(
  open: () => AsyncIterable<Uint8Array>,
  declaredLength: string | undefined,
): BodyReader {
  let consumed = false;
  return {
    async bytes(maxBytes: number): Promise<Uint8Array> {
      if (consumed) throw new TypeError("Cannot read the request body: it was already read");
      consumed = true;
      if (declaredLength !== undefined && Number(declaredLength) > maxBytes) {
        throw tooLarge(maxBytes);
      }
      const chunks: Uint8Array[] = [];
      let size = 0;
      for await (const chunk of open()) {
        size += chunk.byteLength;
        if (size > maxBytes) throw tooLarge(maxBytes);
        chunks.push(chunk);
      }
      return concatBytes(chunks, size);
    },
  };
}

function tooLarge(maxBytes: number): HttpError {
  return new HttpError(
    "ERR_HTTP_BODY_TOO_LARGE",
    `Cannot accept the request body: it is larger than ${maxBytes} bytes`,
  );
}

function concatBytes(chunks: readonly Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return out;
}

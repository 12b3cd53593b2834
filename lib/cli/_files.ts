import type { CliIo } from "./types.ts";

/** Bytes of a new API key or client secret: 256 bits. */
const SECRET_BYTES = 32;

/**
 * A new API key or client secret: 256 random bits as 64 hex digits, which
 * need no quoting in a shell, a header or a form.
 * @param random random bytes
 */
export function newSecret(random: (size: number) => Uint8Array): string {
  let text = "";
  for (const byte of random(SECRET_BYTES)) text += byte.toString(16).padStart(2, "0");
  return text;
}

/**
 * Writes a configuration file as JSON (two-space indents, a final newline),
 * once `check` (the server's reader of that file) has accepted the new text.
 * @param io where to write
 * @param file the file
 * @param value its new content
 * @param check throws when the server would refuse the text
 */
export async function writeConfigJson(
  io: CliIo,
  file: string,
  value: unknown,
  check: (text: string) => unknown,
): Promise<void> {
  const text = `${JSON.stringify(value, null, 2)}\n`;
  check(text);
  await io.writeText(file, text);
}

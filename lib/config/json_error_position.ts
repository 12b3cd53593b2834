const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
// deno-lint-ignore no-control-regex -- a JSON string holds no raw control character
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const MAX_DEPTH = 512;

/**
 * Finds where JSON text stops being valid, since `JSON.parse` on Node 20
 * does not always say.
 * @param text JSON text that failed to parse
 * @returns the 0-based offset of the first invalid character (the text's length when it ends early)
 * @example
 * ```ts
 * jsonErrorPosition("[1,]"); // 3
 * ```
 */
export function jsonErrorPosition(text: string): number {
  let i = 0;
  const fail = (): never => {
    throw i;
  };
  const space = (): void => {
    while (i < text.length && " \t\r\n".includes(text[i]!)) i++;
  };
  const match = (pattern: RegExp): void => {
    pattern.lastIndex = i;
    if (!pattern.test(text)) fail();
    i = pattern.lastIndex;
  };
  const value = (depth: number): void => {
    if (depth > MAX_DEPTH) fail();
    space();
    const c = text[i];
    if (c === "{" || c === "[") {
      const close = c === "{" ? "}" : "]";
      i++;
      space();
      if (text[i] === close) {
        i++;
        return;
      }
      for (;;) {
        if (c === "{") {
          space();
          match(STRING);
          space();
          if (text[i] !== ":") fail();
          i++;
        }
        value(depth + 1);
        space();
        if (text[i] === ",") {
          i++;
          continue;
        }
        if (text[i] === close) {
          i++;
          return;
        }
        fail();
      }
    }
    if (c === '"') return match(STRING);
    for (const word of ["true", "false", "null"]) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return;
      }
    }
    match(NUMBER);
  };
  try {
    value(0);
    space();
    if (i < text.length) fail();
  } catch (position) {
    if (typeof position === "number") return position;
    throw position;
  }
  return text.length;
}

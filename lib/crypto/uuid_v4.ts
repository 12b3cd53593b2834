/**
 * Makes a random (version 4) UUID from injected random bytes.
 * @param random gives random bytes
 * @returns a lower-case UUID
 */
export function uuidV4(random: (size: number) => Uint8Array): string {
  const bytes = random(16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${
    hex.slice(20)
  }`;
}

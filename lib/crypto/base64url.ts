/**
 * Encodes bytes as base64url without padding (RFC 4648 §5).
 * @param bytes the bytes
 * @returns the text
 */
export function encodeBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64url");
}

/**
 * Decodes base64url (padding optional); characters outside the alphabet are skipped, as Node does.
 * @param text the text
 * @returns the bytes
 */
export function decodeBase64Url(text: string): Uint8Array {
  const buffer = Buffer.from(text, "base64url");
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

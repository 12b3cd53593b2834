import { ConfigError, readConfigFile } from "../config/mod.ts";
import { parseRsaKey, type RsaPublicKey } from "../crypto/mod.ts";

/**
 * Reads `ENCRYPTION_KEY`: a PEM RSA key (public, or private for its public
 * half; `\n` escapes allowed), or the path of a file holding one.
 * @param value the setting; empty for none
 * @returns the public key, or undefined for none
 * @throws {ConfigError} naming ENCRYPTION_KEY when it is not such a key
 */
export async function readEncryptionKey(value: string): Promise<RsaPublicKey | undefined> {
  if (value === "") return undefined;
  const pem = value.includes("-----BEGIN") ? value.replaceAll("\\n", "\n") : await readConfigFile(value, "ENCRYPTION_KEY");
  try {
    return parseRsaKey(pem);
  } catch (error) {
    throw new ConfigError(
      "ENCRYPTION_KEY",
      `Cannot start: ENCRYPTION_KEY must be a PEM RSA key of 2048 bits or more (public, or private for its public half), or the path of one: ${(error as Error).message}`,
    );
  }
}

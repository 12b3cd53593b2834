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
  const pem = value.includes("-----BEGIN")
    ? value.replaceAll("\\n", "\n")
    : await readKeyFile(value);
  try {
    return parseRsaKey(pem);
  } catch (error) {
    throw new ConfigError(
      "ENCRYPTION_KEY",
      `Cannot start: ENCRYPTION_KEY must be a PEM RSA key of 2048 bits or more (public, or private for its public half), or the path of one: ${
        (error as Error).message
      }`,
    );
  }
}

/** The longest value taken for a path in a message; longer text (a key pasted without its PEM lines) is not repeated. */
const MAX_SHOWN_PATH = 255;

/** Reads the file a path names; a value that cannot be a path is not quoted (it may be a private key without its PEM lines). */
async function readKeyFile(value: string): Promise<string> {
  try {
    return await readConfigFile(value, "ENCRYPTION_KEY");
  } catch (error) {
    if (value.length <= MAX_SHOWN_PATH && !/\s/.test(value)) throw error;
    const why = error instanceof ConfigError
      ? /\(([^)]*)\)$/.exec(error.message)?.[1] ?? "unreadable"
      : "unreadable";
    throw new ConfigError(
      "ENCRYPTION_KEY",
      `Cannot start: ENCRYPTION_KEY is neither a PEM key (-----BEGIN ...) nor the path of a file that can be read (${why}); its value is not shown`,
    );
  }
}

/** Codes of {@linkcode CryptoError}. */
export type CryptoErrorCode =
  | "ERR_CRYPTO_INVALID_KEY"
  | "ERR_CRYPTO_DECRYPT_FAILED"
  | "ERR_CRYPTO_SIGNATURE_INVALID";

/** Base class of the errors raised by the crypto domain. */
export class CryptoError extends Error {
  readonly code: CryptoErrorCode;

  /**
   * Creates a crypto error.
   * @param code stable error code
   * @param message human-readable message
   * @param options standard error options (`cause`)
   */
  constructor(code: CryptoErrorCode, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "CryptoError";
    this.code = code;
  }
}

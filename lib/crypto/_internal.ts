/**
 * What the package's other domains use of crypto and its users need not:
 * reached only from inside the package (package.json exports no `_`
 * module), so it can change without a change to the public surface.
 * @module
 */
export { bytesEqual } from "./timing_safe_equal.ts";
export { decodeBase64Url, encodeBase64Url } from "./base64url.ts";
export { scryptKey } from "./scrypt.ts";
export { isUuid } from "./name_uuid.ts";
export { newWebhookSecret } from "./webhook_signature.ts";

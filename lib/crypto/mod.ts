/**
 * Cryptographic helpers on `node:crypto`: hashing, constant-time comparison
 * and name-based ids.
 * @module
 */
export { CryptoError } from "./errors.ts";
export type { CryptoErrorCode } from "./errors.ts";
export { sha256Hex } from "./sha256.ts";
export { timingSafeEqual } from "./timing_safe_equal.ts";
export { isUuid, nameUuid, URL_NAMESPACE } from "./name_uuid.ts";
export { uuidV4 } from "./uuid_v4.ts";
export { pooledRandom } from "./pooled_random.ts";
export type { PooledRandomOptions } from "./pooled_random.ts";
export type { NameUuidOptions } from "./name_uuid.ts";

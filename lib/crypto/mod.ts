/**
 * Cryptographic helpers on `node:crypto`: hashing, scrypt, constant-time
 * comparison, base64url, random and name-based ids, Standard Webhooks
 * signatures, RSA keys, and JWE encryption (RSA-OAEP-256 + A256GCM).
 * @module
 */
export { CryptoError } from "./errors.ts";
export type { CryptoErrorCode } from "./errors.ts";
export { sha256Hex } from "./sha256.ts";
export { timingSafeEqual } from "./timing_safe_equal.ts";
export { nameUuid } from "./name_uuid.ts";
export { uuidV4 } from "./uuid_v4.ts";
export { pooledRandom } from "./pooled_random.ts";
export type { PooledRandomOptions } from "./pooled_random.ts";
export type { NameUuidOptions } from "./name_uuid.ts";
export { parseWebhookSecret, signWebhook, verifyWebhook } from "./webhook_signature.ts";
export type { VerifyWebhookOptions, WebhookHeaders } from "./webhook_signature.ts";
export { parseRsaKey } from "./rsa_key.ts";
export type { NodeKeyObject, RsaPublicKey } from "./rsa_key.ts";
export { decryptJwe, encryptJwe } from "./jwe.ts";

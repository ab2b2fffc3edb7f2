// @trivium/crypto/helpers — the spec's cryptographic helpers without the Fastify plugin, so a service that only
// needs them installs no Fastify (its peer is optional) and its types name none. No helper ever logs a secret.
import { DataEncryptor } from './encryption.js'
import { InvalidKeyError } from './errors.js'
import { hashPassword, verifyPassword } from './password.js'
import { Signer } from './signing.js'
import { generateSecureToken } from './token.js'
import { type Totp, totp } from './totp.js'

export { decodeBase64Strict } from './base64.js'
export { DataEncryptor, IV_BYTES, KEY_BYTES, TAG_BYTES } from './encryption.js'
export { DecryptionError, InvalidArgumentError, InvalidKeyError, PasswordWorkerError } from './errors.js'
export {
  BCRYPT_COST,
  configurePasswordWorkers,
  hashPassword,
  MAX_PASSWORD_BYTES,
  PASSWORD_NOT_STRING_MESSAGE,
  PASSWORD_TOO_LONG_MESSAGE,
  passwordWorkerCount,
  shutdownPasswordWorkers,
  verifyPassword,
} from './password.js'
export {
  BUSY_MESSAGE,
  DEFAULT_MAX_QUEUE,
  DEFAULT_WORKER_NICE,
  defaultPoolSize,
  type PasswordPoolOptions,
} from './password-pool.js'
export { Signer } from './signing.js'
export { DEFAULT_TOKEN_BYTES, generateSecureToken, MAX_TOKEN_BYTES } from './token.js'
export {
  TOTP_DIGITS,
  TOTP_SECRET_BYTES,
  TOTP_STEP_SECONDS,
  TOTP_WINDOW,
  type Totp,
  type TotpGenerateOptions,
  type TotpVerifyOptions,
  totp,
} from './totp.js'

export interface CryptoConfig {
  /** ENCRYPTION_KEY: standard base64 of exactly 32 bytes (AES-256-GCM). */
  encryptionKey: string
  /** HASH_SALT: the HMAC-SHA256 key used by `signer`. */
  hashSalt: string
}

export interface TriviumCrypto {
  hashPassword: typeof hashPassword
  verifyPassword: typeof verifyPassword
  encryptor: DataEncryptor
  signer: Signer
  totp: Totp
  generateSecureToken: typeof generateSecureToken
}

/** Helpers bound to one configuration. Throws InvalidKeyError (a TypeError) for a bad key or salt. */
export function createCrypto(config: CryptoConfig): TriviumCrypto {
  if (typeof config !== 'object' || config === null) {
    throw new InvalidKeyError('@trivium/crypto: options { encryptionKey, hashSalt } are required')
  }
  return {
    hashPassword,
    verifyPassword,
    encryptor: new DataEncryptor(config.encryptionKey),
    signer: new Signer(config.hashSalt),
    totp,
    generateSecureToken,
  }
}

// Data encryption: AES-256-GCM, fresh random 16-byte IV per call, output `<IV base64>:<ciphertext base64>`
// where the ciphertext part is the GCM ciphertext followed by its 16-byte authentication tag.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { decodeBase64Strict } from './base64.js'
import { DecryptionError, InvalidArgumentError, InvalidKeyError } from './errors.js'

export const KEY_BYTES = 32
export const IV_BYTES = 16
export const TAG_BYTES = 16
const ALGORITHM = 'aes-256-gcm'

export class DataEncryptor {
  readonly #key: Buffer

  /** `base64Key`: standard padded base64 of exactly 32 random bytes (e.g. `openssl rand -base64 32`). */
  constructor(base64Key: string) {
    if (typeof base64Key !== 'string') {
      throw new InvalidKeyError('@trivium/crypto: encryptionKey must be a base64 string')
    }
    const key = decodeBase64Strict(base64Key.trim())
    if (!key) throw new InvalidKeyError('@trivium/crypto: encryptionKey is not valid base64')
    if (key.length !== KEY_BYTES) {
      throw new InvalidKeyError(
        `@trivium/crypto: encryptionKey must decode to ${KEY_BYTES} bytes (AES-256), got ${key.length}`,
      )
    }
    this.#key = key
  }

  encrypt(plaintext: string): string {
    if (typeof plaintext !== 'string') throw new InvalidArgumentError('encrypt: plaintext must be a string')
    const iv = randomBytes(IV_BYTES)
    const cipher = createCipheriv(ALGORITHM, this.#key, iv, { authTagLength: TAG_BYTES })
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()])
    return `${iv.toString('base64')}:${body.toString('base64')}`
  }

  decrypt(payload: string): string {
    if (typeof payload !== 'string') throw new InvalidArgumentError('decrypt: payload must be a string')
    const parts = payload.split(':')
    const [ivText, bodyText] = parts
    if (parts.length !== 2 || ivText === undefined || bodyText === undefined) {
      throw new InvalidArgumentError(
        `Invalid encrypted payload: expected exactly two parts "<IV base64>:<ciphertext base64>", got ${parts.length}`,
      )
    }
    const iv = decodeBase64Strict(ivText)
    if (!iv || iv.length !== IV_BYTES) {
      throw new InvalidArgumentError(`Invalid encrypted payload: the IV must be base64 of ${IV_BYTES} bytes`)
    }
    const body = decodeBase64Strict(bodyText)
    if (!body || body.length < TAG_BYTES) {
      throw new InvalidArgumentError(
        `Invalid encrypted payload: the ciphertext must be base64 of at least ${TAG_BYTES} bytes`,
      )
    }
    const decipher = createDecipheriv(ALGORITHM, this.#key, iv, { authTagLength: TAG_BYTES })
    decipher.setAuthTag(body.subarray(body.length - TAG_BYTES))
    try {
      const plain = Buffer.concat([
        decipher.update(body.subarray(0, body.length - TAG_BYTES)),
        decipher.final(),
      ])
      return plain.toString('utf8')
    } catch {
      throw new DecryptionError()
    }
  }

  /** Never print the key. */
  toJSON(): string {
    return 'DataEncryptor <redacted>'
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return 'DataEncryptor <redacted>'
  }
}

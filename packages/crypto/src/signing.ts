// HMAC-SHA256 signing with the configured salt as key; hex digest; constant-time verification.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { InvalidArgumentError, InvalidKeyError } from './errors.js'

const HEX_DIGEST = /^[0-9a-fA-F]{64}$/

export class Signer {
  readonly #salt: string

  constructor(salt: string) {
    if (typeof salt !== 'string' || salt.length === 0) {
      throw new InvalidKeyError('@trivium/crypto: hashSalt must be a non-empty string')
    }
    this.#salt = salt
  }

  /** Lower-case hex HMAC-SHA256 of `data` (UTF-8) keyed with the salt. */
  sign(data: string): string {
    if (typeof data !== 'string') throw new InvalidArgumentError('sign: data must be a string')
    return createHmac('sha256', this.#salt).update(data, 'utf8').digest('hex')
  }

  /** Recomputes and compares in constant time. A signature of the wrong length or not hex is false. */
  verify(data: string, signature: string): boolean {
    if (typeof data !== 'string' || typeof signature !== 'string' || !HEX_DIGEST.test(signature)) return false
    const expected = createHmac('sha256', this.#salt).update(data, 'utf8').digest()
    return timingSafeEqual(expected, Buffer.from(signature, 'hex'))
  }

  toJSON(): string {
    return 'Signer <redacted>'
  }
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return 'Signer <redacted>'
  }
}

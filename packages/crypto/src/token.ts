import { randomBytes } from 'node:crypto'
import { InvalidArgumentError } from './errors.js'

export const DEFAULT_TOKEN_BYTES = 32
export const MAX_TOKEN_BYTES = 1024

/** `bytes` random bytes (default 32) as URL-safe base64 without padding (alphabet A–Z a–z 0–9 - _). */
export function generateSecureToken(bytes: number = DEFAULT_TOKEN_BYTES): string {
  if (!Number.isInteger(bytes) || bytes < 1 || bytes > MAX_TOKEN_BYTES) {
    throw new InvalidArgumentError(
      `generateSecureToken: bytes must be an integer from 1 to ${MAX_TOKEN_BYTES}`,
    )
  }
  return randomBytes(bytes).toString('base64url')
}

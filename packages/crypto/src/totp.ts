// TOTP (RFC 6238) through otplib 13: 6 digits, HMAC-SHA1, counter = floor(unix seconds / step) as an
// 8-byte big-endian integer, base32 secret, standard dynamic truncation. verify accepts the counters
// current-window … current+window (window 1 by default).
//
// otplib 13 pitfalls handled here: `verify*` returns `{ valid }` (an object, always truthy), throws on a
// malformed token, and counts its tolerance in seconds (`epochTolerance = step × window`).
import { createRequire } from 'node:module'
import { InvalidArgumentError } from './errors.js'

// otplib (and the hashes and base32 modules under it) is loaded on the first TOTP use, not when the
// package is imported: most processes that import @trivium/crypto or @trivium/auth never check a TOTP
// code (bench/README.md, "cold import").
let otplib: typeof import('otplib') | undefined
function otp(): typeof import('otplib') {
  otplib ??= createRequire(import.meta.url)('otplib') as typeof import('otplib')
  return otplib
}

export const TOTP_DIGITS = 6
export const TOTP_STEP_SECONDS = 30
export const TOTP_WINDOW = 1
/** Bytes of a secret from `generateSecret()` (160 bits, 32 base32 characters). */
export const TOTP_SECRET_BYTES = 20

export interface TotpGenerateOptions {
  /** The time, in unix milliseconds (default `Date.now()`). */
  at?: number
  /** Time step in seconds (default 30). */
  step?: number
}

export interface TotpVerifyOptions extends TotpGenerateOptions {
  /** Steps accepted on each side of the current one (default 1). */
  window?: number
}

export interface Totp {
  generate(secret: string, opts?: TotpGenerateOptions): string
  verify(code: string, secret: string, opts?: TotpVerifyOptions): boolean
  generateSecret(): string
  keyUri(opts: { secret: string; accountName: string; issuer: string }): string
}

const CODE = /^\d{6}$/
const BASE32 = /^[A-Z2-7]+$/

/** Accepts lower case, spaces (as apps display secrets) and `=` padding; returns the bare upper-case form. */
function normalizeSecret(secret: unknown): string | undefined {
  if (typeof secret !== 'string' || secret.length > 1024) return undefined
  const bare = secret.replace(/\s+/g, '').replace(/=+$/, '').toUpperCase()
  return BASE32.test(bare) ? bare : undefined
}

function epochSeconds(at: number | undefined): number {
  const ms = at ?? Date.now()
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new InvalidArgumentError('totp: "at" must be a non-negative number of unix milliseconds')
  }
  return Math.floor(ms / 1000)
}

function stepSeconds(step: number | undefined): number {
  const value = step ?? TOTP_STEP_SECONDS
  if (!Number.isInteger(value) || value < 1)
    throw new InvalidArgumentError('totp: "step" must be a positive integer')
  return value
}

export const totp: Totp = {
  /** The 6-digit code for `secret` (base32) at `opts.at`. Throws InvalidArgumentError for a bad secret. */
  generate(secret, opts = {}) {
    const bare = normalizeSecret(secret)
    if (!bare) throw new InvalidArgumentError('totp: secret must be a base32 string')
    try {
      return otp().generateSync({
        secret: bare,
        epoch: epochSeconds(opts.at),
        period: stepSeconds(opts.step),
      })
    } catch (err) {
      if (err instanceof InvalidArgumentError) throw err
      // otplib: secret shorter than 16 bytes, or bits that are not base32. Its message names no secret.
      throw new InvalidArgumentError(`totp: ${(err as Error).message}`)
    }
  },

  /**
   * True only when `code` is exactly 6 digits and matches a counter in the window. A malformed code or
   * secret is false, never a throw; only bad options (`at`, `step`, `window`) throw InvalidArgumentError.
   */
  verify(code, secret, opts = {}) {
    if (typeof code !== 'string' || !CODE.test(code)) return false
    const bare = normalizeSecret(secret)
    if (!bare) return false
    const window = opts.window ?? TOTP_WINDOW
    if (!Number.isInteger(window) || window < 0) {
      throw new InvalidArgumentError('totp: "window" must be a non-negative integer')
    }
    const period = stepSeconds(opts.step)
    const epoch = epochSeconds(opts.at)
    try {
      const result = otp().verifySync({
        secret: bare,
        token: code,
        epoch,
        period,
        epochTolerance: period * window,
      })
      return result.valid === true
    } catch {
      return false
    }
  },

  /** A fresh random secret: 20 bytes, base32 (32 characters). */
  generateSecret() {
    return otp().generateSecret({ length: TOTP_SECRET_BYTES })
  },

  /** `otpauth://totp/<issuer>:<account>?secret=…&issuer=…` for authenticator apps (QR code content). */
  keyUri({ secret, accountName, issuer }) {
    const bare = normalizeSecret(secret)
    if (!bare) throw new InvalidArgumentError('totp: secret must be a base32 string')
    if (typeof accountName !== 'string' || accountName.length === 0) {
      throw new InvalidArgumentError('totp: accountName must be a non-empty string')
    }
    if (typeof issuer !== 'string' || issuer.length === 0) {
      throw new InvalidArgumentError('totp: issuer must be a non-empty string')
    }
    return otp().generateURI({ issuer, label: accountName, secret: bare })
  },
}

// Password hashing: bcrypt (bcryptjs) with cost 12, computed in a worker thread pool.
//
// bcrypt only reads the first 72 bytes of its input. Rather than let two long passwords that share a
// 72-byte prefix hash the same, hashPassword rejects passwords longer than 72 UTF-8 bytes with a
// ValidationException (field "password"); verifyPassword returns false for them.
import { ValidationException } from '@trivium/wire/errors'
import { PasswordPool, type PasswordPoolOptions } from './password-pool.js'

export const BCRYPT_COST = 12
export const MAX_PASSWORD_BYTES = 72
export const PASSWORD_TOO_LONG_MESSAGE = `Password must be at most ${MAX_PASSWORD_BYTES} bytes`
export const PASSWORD_NOT_STRING_MESSAGE = 'Password must be a string'

/** `$2a$`/`$2b$`/`$2x$`/`$2y$`, cost 04–31, 22-character salt + 31-character hash in bcrypt's base64. */
const BCRYPT_HASH = /^\$2[abxy]\$(?:0[4-9]|[12]\d|3[01])\$[./A-Za-z0-9]{53}$/

const pool = new PasswordPool()

function checkPassword(password: unknown): string {
  if (typeof password !== 'string') {
    throw new ValidationException(PASSWORD_NOT_STRING_MESSAGE, [
      { field: 'password', message: PASSWORD_NOT_STRING_MESSAGE },
    ])
  }
  if (Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES) {
    throw new ValidationException(PASSWORD_TOO_LONG_MESSAGE, [
      { field: 'password', message: PASSWORD_TOO_LONG_MESSAGE },
    ])
  }
  return password
}

/** bcrypt hash (`$2b$12$…`, 60 characters) of `password`, computed off the main thread. */
export async function hashPassword(password: string): Promise<string> {
  const checked = checkPassword(password)
  return (await pool.run({ op: 'hash', password: checked, cost: BCRYPT_COST })) as string
}

/** True when `password` matches `hash`. False, never a throw, for a malformed hash or a bad password. */
export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  if (typeof password !== 'string' || Buffer.byteLength(password, 'utf8') > MAX_PASSWORD_BYTES) return false
  if (typeof hash !== 'string' || !BCRYPT_HASH.test(hash)) return false
  return (await pool.run({ op: 'verify', password, hash })) === true
}

/** Pool size and queue bound (call before the first hash, or at any time for later jobs). */
export function configurePasswordWorkers(options: PasswordPoolOptions): void {
  pool.configure(options)
}

/** Terminates the worker threads (jobs in flight are rejected). The pool restarts lazily when used again. */
export function shutdownPasswordWorkers(): Promise<void> {
  return pool.shutdown()
}

/** Workers currently running (for tests and metrics). */
export function passwordWorkerCount(): number {
  return pool.started
}

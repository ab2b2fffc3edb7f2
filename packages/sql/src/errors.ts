// Error helpers shared by both engines. A database that cannot be reached becomes
// DatabaseUnavailableError, a ServiceUnavailableException of @trivium/wire (503, TRV_SERVICE_UNAVAILABLE),
// so a request that needs the database while it is down gets a clear 503 on every transport.
import { ServiceUnavailableException } from '@trivium/wire/errors'

export const DATABASE_UNAVAILABLE_MESSAGE = 'Database unavailable'

/** The database cannot be reached (refused, timed out, shut down, pool or PGlite closed). */
export class DatabaseUnavailableError extends ServiceUnavailableException {
  constructor(cause?: unknown) {
    super(DATABASE_UNAVAILABLE_MESSAGE)
    this.name = 'ServiceUnavailableException'
    if (cause !== undefined) (this as { cause?: unknown }).cause = cause
  }
}

function sqlState(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' ? code : undefined
}

/** SQLSTATE 23505 (unique_violation), on PostgreSQL and PGlite alike. */
export function isUniqueViolation(err: unknown): boolean {
  return sqlState(err) === '23505'
}

/** SQLSTATE 23503 (foreign_key_violation), on PostgreSQL and PGlite alike. */
export function isForeignKeyViolation(err: unknown): boolean {
  return sqlState(err) === '23503'
}

/** The constraint a violation names (e.g. `roles_name_key`), when the engine reports it. */
export function violatedConstraint(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined
  const c = (err as { constraint?: unknown }).constraint
  return typeof c === 'string' ? c : undefined
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EPIPE',
])

const UNAVAILABLE_MESSAGES = [
  'Connection terminated',
  'timeout exceeded when trying to connect',
  'Cannot use a pool after calling end',
  'Client has encountered a connection error',
  'PGlite is closed',
]

/** True when `err` means the database cannot be reached (as opposed to a bad query). */
export function isConnectionError(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return true
  const code = sqlState(err)
  if (code !== undefined) {
    if (NETWORK_CODES.has(code)) return true
    // 08xxx connection exceptions, 57P01-57P03 shutdown / cannot connect now, 53300 too many connections
    if (
      /^08[0-9A-Z]{3}$/.test(code) ||
      code === '57P01' ||
      code === '57P02' ||
      code === '57P03' ||
      code === '53300'
    ) {
      return true
    }
  }
  if (err instanceof AggregateError) return err.errors.some(isConnectionError)
  const message = err instanceof Error ? err.message : ''
  return UNAVAILABLE_MESSAGES.some((m) => message.includes(m))
}

/** Rethrows connection failures as DatabaseUnavailableError; other errors pass unchanged. */
export function mapConnectionError(err: unknown): unknown {
  if (err instanceof DatabaseUnavailableError) return err
  return isConnectionError(err) ? new DatabaseUnavailableError(err) : err
}

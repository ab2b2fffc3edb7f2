// The client's errors are @trivium/wire's vocabulary (PROTOCOL.md "Errors"): the same classes the
// server throws, so `instanceof` works on every path. Every transport rebuilds them from the wire
// error body with `fromErrorBody`.
import { type ErrorBody, fromErrorBody, isTriviumError, TriviumError } from '@trivium/wire/errors'

export * from '@trivium/wire/errors'

/** The message of the NetworkException every call fails with once `close()` was called. */
export const CLIENT_CLOSED_MESSAGE = 'Client closed'

/**
 * An error with a Trivium code from another copy of @trivium/wire (two installed versions) becomes
 * this copy's class, so `instanceof` works on every path. Anything else is returned unchanged.
 */
export function toClientError(err: unknown): unknown {
  if (err instanceof TriviumError) return err
  if (isTriviumError(err)) {
    return fromErrorBody(err as unknown as Partial<ErrorBody>)
  }
  return err
}

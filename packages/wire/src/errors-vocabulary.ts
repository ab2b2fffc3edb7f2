// The one error vocabulary of PROTOCOL.md "Errors", shared by the server (@trivium/core and the leaf
// packages) and the client (`@trivium/wire/errors`): the classes (error-classes.ts), the kinds' table
// (error-kinds.ts), and the helpers that rebuild an error from its body or make a package's own coded error.

import type { ErrorBody, TriviumError } from './error-classes.js'
import * as classes from './error-classes.js'
import { type ErrorKind, KIND_BY_CODE } from './error-kinds.js'

export * from './error-classes.js'
export { ERROR_KINDS, type ErrorKind } from './error-kinds.js'

/** The fixed message of an unexpected server error (the original is logged, never sent). */
export const INTERNAL_ERROR_MESSAGE = 'Internal server error'

/**
 * Each kind's class, by name: error-classes.ts exports each class under its kind's name, so a kind added to
 * ERROR_KINDS without its class fails this type (its constructor takes the message first).
 */
const CLASS_BY_KIND: Record<
  Exclude<ErrorKind, 'ValidationException' | 'RateLimitExceededException'>,
  new (
    message: string,
  ) => TriviumError
> = classes

/** Rebuilds a typed error from a wire error body (any transport). */
export function fromErrorBody(body: Partial<ErrorBody> | null | undefined): TriviumError {
  const b = body ?? {}
  const message = typeof b.message === 'string' ? b.message : 'Unknown error'
  const kind = typeof b.code === 'string' ? KIND_BY_CODE.get(b.code) : undefined
  let error: TriviumError
  if (kind === 'ValidationException') {
    error = new classes.ValidationException(message, Array.isArray(b.details) ? b.details : [])
  } else if (kind === 'RateLimitExceededException') {
    error = new classes.RateLimitExceededException(Number(b.retryAfter ?? 0), message)
  } else if (kind !== undefined) {
    error = new CLASS_BY_KIND[kind](message)
  } else {
    // A code this version does not know: keep what the server said.
    error = new classes.TriviumError(
      message,
      typeof b.code === 'string' ? b.code : 'TRV_INTERNAL',
      typeof b.statusCode === 'number' ? b.statusCode : 500,
      typeof b.error === 'string' ? b.error : 'InternalErrorException',
    )
  }
  if (typeof b.requestId === 'string') error.requestId = b.requestId
  return error
}

/** An error class of a package of its own (`TRV_<PACKAGE>_*`), not one of the vocabulary's kinds. */
export type CodedErrorClass<A extends unknown[]> = new (
  ...args: A
) => Error & { readonly code: string; readonly statusCode: number }

/**
 * Makes a named error class with a stable code (`err.name` is `name`, `err.code` is `code`). `message`
 * builds the message from the constructor's arguments; an argument `{ cause }` sets `err.cause`.
 * `Base` lets argument errors stay TypeErrors.
 */
export function codedError<A extends unknown[]>(
  name: string,
  code: string,
  statusCode: number,
  message: (...args: A) => string,
  Base: new (message: string) => Error = Error,
): CodedErrorClass<A> {
  const Named = {
    [name]: class extends Base {
      readonly code = code
      readonly statusCode = statusCode
      constructor(...args: A) {
        super(message(...args))
        this.name = name
        const last: unknown = args.at(-1)
        if (typeof last === 'object' && last !== null && 'cause' in last) {
          ;(this as { cause?: unknown }).cause = last.cause
        }
      }
    },
  }[name] as CodedErrorClass<A>
  return Named
}

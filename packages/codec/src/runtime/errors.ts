// Errors of the runtime codec. Browser-safe: no Node built-ins, no @trivium/core import.

/** One field-level problem (same shape as @trivium/core's FieldError). */
export interface FieldError {
  field: string
  message: string
}

/**
 * Bytes that are not a valid encoding: truncated data, a length or count larger than the bytes left,
 * a negative length, invalid UTF-8, a bool or optional marker other than 0/1, trailing bytes, nesting
 * deeper than the limit, an unsupported format version. `offset` is where the reader was.
 */
export class DecodeError extends Error {
  readonly code = 'TRV_DECODE'
  readonly offset: number
  constructor(message: string, offset: number) {
    super(message)
    this.name = 'DecodeError'
    this.offset = offset
  }
}

/** A value that cannot be written in its declared type (e.g. a float for int32, an int64 out of range). */
export class EncodeError extends TypeError {
  readonly code = 'TRV_ENCODE'
  constructor(message: string) {
    super(message)
    this.name = 'EncodeError'
  }
}

/**
 * What `fromJSON` throws when the JSON form is invalid. It has the shape of @trivium/core's
 * ValidationException (code TRV_VALIDATION, statusCode 400, details), so core answers it with the
 * common 400 body; `@trivium/codec` (the server entry) swaps in core's own class with
 * `setValidationErrorFactory`.
 */
export class ModelValidationError extends Error {
  readonly code = 'TRV_VALIDATION'
  readonly statusCode = 400
  readonly kind = 'ValidationException'
  readonly details: FieldError[]
  constructor(message: string, details: FieldError[] = []) {
    super(message)
    this.name = 'ValidationException'
    this.details = details
  }
}

export type ValidationErrorFactory = (message: string, details: FieldError[]) => Error

let factory: ValidationErrorFactory = (message, details) => new ModelValidationError(message, details)

/** Chooses the error class thrown by generated `fromJSON` (the server entry installs core's ValidationException). */
export function setValidationErrorFactory(next: ValidationErrorFactory): void {
  factory = next
}

/** The error for a model whose JSON form failed: `Invalid <Model>: <field> <message>`. */
export function validationError(model: string, details: FieldError[]): Error {
  const first = details[0]
  return factory(`Invalid ${model}: ${first ? `${first.field} ${first.message}` : 'is invalid'}`, details)
}

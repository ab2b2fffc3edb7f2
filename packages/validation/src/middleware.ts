// Endpoint validation as a core middleware: an endpoint declares which request fields to check, and the
// check runs before the handler on every transport (HTTP, WebSocket, TCP share one pipeline).
//
//   fastify.trivium.endpoint('users.register', {
//     method: 'POST', url: '/users',
//     validate: { email: 'email', username: 'username', password: { rule: 'password', minLength: 10 } },
//     sanitize: ['bio'],
//   }, handler)
import {
  type CallTarget,
  directMiddleware,
  type FieldError,
  type Middleware,
  type TriviumCall,
  ValidationException,
} from '@trivium/core'
import { enforcesSettings, isThenable } from '@trivium/core/internal'
import { REQUIRED_MESSAGE } from './messages.js'
import { SETUP } from './setup-errors.js'
import {
  sanitize,
  validateEmail,
  validateFileContent,
  validateFileExtension,
  validateFileSize,
  validatePassword,
  validateUsername,
} from './validators.js'

export type RuleName = 'email' | 'username' | 'password' | 'fileExtension' | 'fileSize' | 'fileContent'

/** A custom check: throw a ValidationException (its message is used) to reject the value. */
export type CustomRule = (value: unknown, field: string) => void

export interface RuleSpec {
  rule: RuleName | CustomRule
  /** Absent (undefined or null) passes; present values are still checked. Default false. */
  optional?: boolean
  /** For `password`: minimum length (default 8). */
  minLength?: number
}

export type FieldRule = RuleName | CustomRule | RuleSpec

declare module '@trivium/core' {
  interface TriviumEndpointConfig {
    /** Request-body fields to check before the handler, by field name. */
    validate?: Record<string, FieldRule>
    /** Request-body string fields to replace with `sanitize(value)` before the handler (after `validate`). */
    sanitize?: string[]
  }
}

function runRule(rule: RuleName | CustomRule, value: unknown, field: string, spec: RuleSpec): void {
  switch (rule) {
    case 'email':
      validateEmail(value, field)
      return
    case 'username':
      validateUsername(value, field)
      return
    case 'password':
      validatePassword(value, spec.minLength === undefined ? {} : { minLength: spec.minLength }, field)
      return
    case 'fileExtension':
      validateFileExtension(value, field)
      return
    case 'fileSize':
      validateFileSize(value, field)
      return
    case 'fileContent':
      validateFileContent(value, field)
      return
    default:
      if (typeof rule === 'function') {
        rule(value, field)
        return
      }
      throw new TypeError(`@trivium/validation: unknown rule "${String(rule)}" for field "${field}"`)
  }
}

function toSpec(rule: FieldRule): RuleSpec {
  return typeof rule === 'object' && rule !== null ? rule : { rule }
}

function isValidationError(err: unknown): err is ValidationException {
  return typeof err === 'object' && err !== null && 'code' in err && err.code === 'TRV_VALIDATION'
}

function fieldValue(body: unknown, field: string): unknown {
  if (typeof body !== 'object' || body === null) return undefined
  // An own property only (never one inherited from Object.prototype, e.g. `constructor`).
  const own: PropertyDescriptor | undefined = Object.getOwnPropertyDescriptor(body, field)
  return own?.value
}

/**
 * Checks `call.body` against the endpoint's `validate` declaration. Every declared field is checked;
 * the thrown ValidationException's message is the first failure's and `details` lists every failure,
 * each naming its field.
 */
export function checkCall(call: TriviumCall<unknown, CallTarget>): void | Promise<void> {
  const config = call.definition.config
  if (!config.validate && !config.sanitize) return
  const body: unknown = call.body
  // An asynchronous request model (a Standard Schema's async checks): its value once they have settled.
  if (isThenable(body)) return Promise.resolve(body).then((settled) => checkBody(config, settled))
  checkBody(config, body)
}

function checkBody(config: TriviumCall<unknown, CallTarget>['definition']['config'], body: unknown): void {
  const rules = config.validate
  const toSanitize = config.sanitize
  if (rules) {
    const details: FieldError[] = []
    let message: string | undefined
    for (const [field, rule] of Object.entries(rules)) {
      const spec = toSpec(rule)
      const value = fieldValue(body, field)
      if (value === undefined || value === null) {
        if (spec.optional) continue
        message ??= REQUIRED_MESSAGE
        details.push({ field, message: REQUIRED_MESSAGE })
        continue
      }
      try {
        runRule(spec.rule, value, field, spec)
      } catch (err) {
        if (!isValidationError(err)) throw err
        message ??= err.message
        const fieldDetails =
          Array.isArray(err.details) && err.details.length > 0
            ? err.details
            : [{ field, message: err.message }]
        details.push(...fieldDetails)
      }
    }
    if (message !== undefined) throw new ValidationException(message, details)
  }
  if (toSanitize && typeof body === 'object' && body !== null) {
    for (const field of toSanitize) {
      const value = fieldValue(body, field)
      if (typeof value === 'string') Reflect.set(body, field, sanitize(value))
    }
  }
}

/** The middleware: `fastify.trivium.use(validationMiddleware(), { name: 'validation' })`. */
export function validationMiddleware(): Middleware {
  return enforcesSettings(
    ['validate', 'sanitize'],
    directMiddleware((call, next) => {
      const checked = checkCall(call)
      return checked === undefined ? next() : checked.then(() => next())
    }),
  )
}

/** Checks every endpoint's declaration once at start-up, so a typo in a rule fails `ready()`. */
export function checkDeclaration(name: string, config: { validate?: unknown; sanitize?: unknown }): void {
  const { validate, sanitize: fields } = config
  if (validate !== undefined) {
    if (typeof validate !== 'object' || validate === null || Array.isArray(validate)) {
      throw SETUP.TRV_VALIDATION_VALIDATE(name)
    }
    const names: readonly string[] = [
      'email',
      'username',
      'password',
      'fileExtension',
      'fileSize',
      'fileContent',
    ]
    for (const [field, rule] of Object.entries(validate)) {
      const spec = toSpec(rule as FieldRule)
      if (typeof spec.rule !== 'function' && !names.includes(spec.rule as string)) {
        throw SETUP.TRV_VALIDATION_RULE(name, spec.rule, field)
      }
      if (spec.minLength !== undefined && (!Number.isInteger(spec.minLength) || spec.minLength < 1)) {
        throw SETUP.TRV_VALIDATION_MIN_LENGTH(name, field)
      }
    }
  }
  if (fields !== undefined && (!Array.isArray(fields) || fields.some((f) => typeof f !== 'string'))) {
    throw SETUP.TRV_VALIDATION_SANITIZE(name)
  }
}

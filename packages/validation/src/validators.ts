// The spec's input checks. Each throws core's ValidationException with the spec's exact message and
// `details: [{ field, message }]`. Every pattern here is a single character class or a literal, so each
// check runs in time linear in its input (no nested or overlapping quantifiers to backtrack over).
import { type FieldError, ValidationException } from '@trivium/core'
import {
  ALLOWED_FILE_EXTENSIONS,
  EMAIL_MESSAGE,
  FILE_CONTENT_MESSAGE,
  FILE_CONTENT_SCAN_BYTES,
  FILE_SIZE_INVALID_MESSAGE,
  FILE_SIZE_MESSAGE,
  FILE_TYPE_MESSAGE,
  MAX_FILE_SIZE,
  MIN_PASSWORD_LENGTH,
  PASSWORD_DIGIT_MESSAGE,
  PASSWORD_LOWERCASE_MESSAGE,
  PASSWORD_SPECIAL_MESSAGE,
  PASSWORD_UPPERCASE_MESSAGE,
  passwordLengthMessage,
  USERNAME_MESSAGE,
} from './messages.js'

function fail(field: string, message: string): never {
  throw new ValidationException(message, [{ field, message }])
}

const EMAIL_LOCAL = /^[A-Za-z0-9._%+-]+$/
const EMAIL_DOMAIN_HEAD = /^[A-Za-z0-9.-]+$/
const EMAIL_TLD = /^[A-Za-z]{2,}$/

/**
 * True when `email` is: local part of letters, digits and . _ % + -; then @; then a domain of letters,
 * digits, . and -; then a dot; then at least 2 letters (the spec's rule, ASCII letters).
 */
export function isEmail(email: unknown): boolean {
  if (typeof email !== 'string') return false
  const at = email.indexOf('@')
  if (at <= 0 || email.indexOf('@', at + 1) !== -1) return false
  const domain = email.slice(at + 1)
  // The letters-only tail can only start after the last dot: any earlier dot would put a dot in it.
  const dot = domain.lastIndexOf('.')
  if (dot <= 0) return false
  return (
    EMAIL_LOCAL.test(email.slice(0, at)) &&
    EMAIL_DOMAIN_HEAD.test(domain.slice(0, dot)) &&
    EMAIL_TLD.test(domain.slice(dot + 1))
  )
}

export function validateEmail(email: unknown, field = 'email'): string {
  if (!isEmail(email)) fail(field, EMAIL_MESSAGE)
  return email as string
}

const USERNAME = /^[A-Za-z0-9_]{3,20}$/

export function validateUsername(username: unknown, field = 'username'): string {
  if (typeof username !== 'string' || !USERNAME.test(username)) fail(field, USERNAME_MESSAGE)
  return username
}

export interface PasswordOptions {
  /** Minimum length in characters (Unicode code points); default 8. */
  minLength?: number
}

/**
 * Every password rule the value fails, in the spec's order: length, uppercase, lowercase, number,
 * special character. Empty when the password is acceptable.
 */
export function passwordProblems(password: unknown, options: PasswordOptions = {}): string[] {
  const minLength = options.minLength ?? MIN_PASSWORD_LENGTH
  if (!Number.isInteger(minLength) || minLength < 1) {
    throw new TypeError('@trivium/validation: minLength must be a positive integer')
  }
  const value = typeof password === 'string' ? password : ''
  const problems: string[] = []
  let length = 0
  for (const _ of value) length++ // code points, not UTF-16 units
  if (length < minLength) problems.push(passwordLengthMessage(minLength))
  if (!/[A-Z]/.test(value)) problems.push(PASSWORD_UPPERCASE_MESSAGE)
  if (!/[a-z]/.test(value)) problems.push(PASSWORD_LOWERCASE_MESSAGE)
  if (!/[0-9]/.test(value)) problems.push(PASSWORD_DIGIT_MESSAGE)
  if (!/[!@#$%^&*(),.?":{}|<>]/.test(value)) problems.push(PASSWORD_SPECIAL_MESSAGE)
  return problems
}

/**
 * Checks every rule. The exception's message is the first failing rule (the spec's message);
 * `details` lists every failing rule, one `{ field, message }` each, so a form can show them all.
 */
export function validatePassword(
  password: unknown,
  options: PasswordOptions = {},
  field = 'password',
): string {
  const problems = passwordProblems(password, options)
  const [first] = problems
  if (first !== undefined) {
    const details: FieldError[] = problems.map((message) => ({ field, message }))
    throw new ValidationException(first, details)
  }
  return password as string
}

/** The extension (from the last dot, lower-cased) must be .jpg .jpeg .png .gif .pdf .doc or .docx. */
export function validateFileExtension(filename: unknown, field = 'filename'): string {
  if (typeof filename !== 'string') fail(field, FILE_TYPE_MESSAGE)
  const dot = filename.lastIndexOf('.')
  const extension = dot === -1 ? '' : filename.slice(dot).toLowerCase()
  if (!ALLOWED_FILE_EXTENSIONS.includes(extension)) fail(field, FILE_TYPE_MESSAGE)
  return filename
}

/** At most 10 MiB (10 × 1024 × 1024 bytes). A size that is not a non-negative integer is invalid. */
export function validateFileSize(size: unknown, field = 'size'): number {
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 0) fail(field, FILE_SIZE_INVALID_MESSAGE)
  if (size > MAX_FILE_SIZE) fail(field, FILE_SIZE_MESSAGE)
  return size
}

const MALICIOUS = /<script|javascript:/i

/**
 * The first 1024 bytes must contain neither `<script` nor `javascript:` (compared case-insensitively,
 * since HTML is). Strings are measured in UTF-8 bytes. Bytes are read as Latin-1 so that no byte
 * sequence (invalid UTF-8 included) can hide the ASCII patterns.
 */
export function validateFileContent(content: unknown, field = 'content'): void {
  let head: string
  if (typeof content === 'string') {
    head = Buffer.from(content.slice(0, FILE_CONTENT_SCAN_BYTES), 'utf8')
      .subarray(0, FILE_CONTENT_SCAN_BYTES)
      .toString('latin1')
  } else if (content instanceof Uint8Array) {
    head = Buffer.from(
      content.buffer,
      content.byteOffset,
      Math.min(content.byteLength, FILE_CONTENT_SCAN_BYTES),
    ).toString('latin1')
  } else if (content instanceof ArrayBuffer) {
    head = Buffer.from(content, 0, Math.min(content.byteLength, FILE_CONTENT_SCAN_BYTES)).toString('latin1')
  } else {
    fail(field, FILE_CONTENT_MESSAGE)
  }
  if (MALICIOUS.test(head)) fail(field, FILE_CONTENT_MESSAGE)
}

// --- sanitize ---------------------------------------------------------------------------------------

const SQL_KEYWORDS = /\b(?:SELECT|INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|EXEC|UNION|SCRIPT)\b/gi
// `on<word>` must start a word (`\b`), so "button=" keeps its "on"; `\s*=` allows `onclick =`.
// Starting only at word boundaries also keeps the scan linear ("onononon…" has one start, not n/2).
const SCRIPT_PATTERNS = /<script|javascript:|\bon\w+\s*=|<iframe|<object|<embed/gi
const HTML_ENTITIES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#x27;',
}

/** Step 1: whole-word, case-insensitive SQL keywords removed. */
export function stripSqlKeywords(input: string): string {
  return input.replace(SQL_KEYWORDS, '')
}

/** Step 2: `<script`, `javascript:`, `on<word>=` handlers, `<iframe`, `<object`, `<embed` removed. */
export function stripScriptPatterns(input: string): string {
  return input.replace(SCRIPT_PATTERNS, '')
}

/** Step 3: & < > " ' HTML-encoded (& first, so nothing is encoded twice). */
export function encodeHtml(input: string): string {
  return input.replace(/[&<>"']/g, (ch) => HTML_ENTITIES[ch] ?? ch)
}

/**
 * The spec's sanitize, in its order: SQL keywords, then script/handler patterns, then HTML-encoding,
 * then trimming surrounding whitespace. Each removal is one pass (not repeated to a fixed point).
 */
export function sanitize(input: string): string {
  if (typeof input !== 'string') throw new TypeError('@trivium/validation: sanitize expects a string')
  return encodeHtml(stripScriptPatterns(stripSqlKeywords(input))).trim()
}

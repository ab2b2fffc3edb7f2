// The specification's messages ("Input validation" table), word for word.
export const EMAIL_MESSAGE = 'Invalid email format'
export const USERNAME_MESSAGE =
  'Username must be 3-20 characters and contain only letters, numbers, and underscores'
export const passwordLengthMessage = (minLength: number): string =>
  `Password must be at least ${minLength} characters`
export const PASSWORD_UPPERCASE_MESSAGE = 'Password must contain at least one uppercase letter'
export const PASSWORD_LOWERCASE_MESSAGE = 'Password must contain at least one lowercase letter'
export const PASSWORD_DIGIT_MESSAGE = 'Password must contain at least one number'
export const PASSWORD_SPECIAL_MESSAGE = 'Password must contain at least one special character'
export const FILE_TYPE_MESSAGE = 'File type not allowed'
export const FILE_SIZE_MESSAGE = 'File size exceeds limit'
export const FILE_CONTENT_MESSAGE = 'File contains potentially malicious content'
/** Not in the spec: a file size that is not a non-negative integer number of bytes. */
export const FILE_SIZE_INVALID_MESSAGE = 'File size is invalid'
/** Not in the spec: a declared field is absent from the request body (middleware). */
export const REQUIRED_MESSAGE = 'Field is required'

/** Other constants of the spec. */
export const MIN_PASSWORD_LENGTH = 8
export const USERNAME_MIN_LENGTH = 3
export const USERNAME_MAX_LENGTH = 20
export const MAX_FILE_SIZE = 10 * 1024 * 1024
export const FILE_CONTENT_SCAN_BYTES = 1024
export const ALLOWED_FILE_EXTENSIONS: readonly string[] = Object.freeze([
  '.jpg',
  '.jpeg',
  '.png',
  '.gif',
  '.pdf',
  '.doc',
  '.docx',
])
/** The special characters of the password rule: ! @ # $ % ^ & * ( ) , . ? : { } | < > and ". */
export const PASSWORD_SPECIAL_CHARACTERS = '!@#$%^&*(),.?":{}|<>'

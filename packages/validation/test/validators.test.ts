import { ValidationException } from '@trivium/core'
import {
  ALLOWED_FILE_EXTENSIONS,
  isEmail,
  MAX_FILE_SIZE,
  passwordProblems,
  validateEmail,
  validateFileContent,
  validateFileExtension,
  validateFileSize,
  validatePassword,
  validateUsername,
} from '@trivium/validation'
import t from 'tap'

function errorOf(fn: () => unknown): ValidationException {
  try {
    fn()
  } catch (err) {
    return err as ValidationException
  }
  throw new Error('expected a throw')
}

function rejects(t: any, fn: () => unknown, field: string, message: string, label?: string): void {
  const err = errorOf(fn)
  t.ok(err instanceof ValidationException, `${label ?? message}: ValidationException`)
  t.equal(err.message, message, label)
  t.equal(err.code, 'TRV_VALIDATION')
  t.equal(err.statusCode, 400)
  t.same(err.details, [{ field, message }], label)
}

t.test('e-mail: Invalid email format', async (t) => {
  for (const ok of [
    'user@example.com',
    'first.last+tag@sub.example.co',
    'a_b%c-d@x-y.z.io',
    'UPPER@EXAMPLE.ORG',
    '1@2.ab',
    'a@b..cd', // the spec's rule allows dots anywhere in the domain head
  ]) {
    t.equal(validateEmail(ok), ok, ok)
    t.equal(isEmail(ok), true)
  }
  for (const bad of [
    '',
    'plain',
    '@example.com',
    'user@',
    'user@example',
    'user@example.c',
    'user@.com',
    'user@example.c0m',
    'us er@example.com',
    'user@exa mple.com',
    'user@@example.com',
    'user@a@b.com',
    'user!@example.com',
    'user@example.com ',
    'user@exam_ple.com',
    'usér@example.com',
    'user@example.cöm',
    'user@example.com.',
  ]) {
    rejects(t, () => validateEmail(bad), 'email', 'Invalid email format', JSON.stringify(bad))
  }
  rejects(t, () => validateEmail(42), 'email', 'Invalid email format', 'number')
  rejects(t, () => validateEmail(undefined), 'email', 'Invalid email format', 'undefined')
  rejects(t, () => validateEmail('x', 'contact'), 'contact', 'Invalid email format', 'custom field name')
})

t.test('username: 3-20 letters, digits, underscores', async (t) => {
  const message = 'Username must be 3-20 characters and contain only letters, numbers, and underscores'
  for (const ok of ['abc', 'a'.repeat(20), 'User_01', '___', '123']) t.equal(validateUsername(ok), ok)
  for (const bad of [
    'ab',
    'a'.repeat(21),
    'user-name',
    'user name',
    'user.name',
    'üser',
    '',
    'abc\n',
    'ab😀',
  ]) {
    rejects(t, () => validateUsername(bad), 'username', message, JSON.stringify(bad))
  }
  rejects(t, () => validateUsername(null), 'username', message, 'null')
})

t.test('password: each rule has its exact message', async (t) => {
  t.equal(validatePassword('Abcdef1!'), 'Abcdef1!')
  rejects(t, () => validatePassword('Abcde1!'), 'password', 'Password must be at least 8 characters')
  rejects(
    t,
    () => validatePassword('abcdef1!'),
    'password',
    'Password must contain at least one uppercase letter',
  )
  rejects(
    t,
    () => validatePassword('ABCDEF1!'),
    'password',
    'Password must contain at least one lowercase letter',
  )
  rejects(t, () => validatePassword('Abcdefg!'), 'password', 'Password must contain at least one number')
  rejects(
    t,
    () => validatePassword('Abcdefg1'),
    'password',
    'Password must contain at least one special character',
  )
})

t.test('password: configurable minimum length', async (t) => {
  rejects(
    t,
    () => validatePassword('Abcdef1!', { minLength: 12 }),
    'password',
    'Password must be at least 12 characters',
  )
  t.equal(validatePassword('Abcdefghi1!x', { minLength: 12 }), 'Abcdefghi1!x')
  t.equal(validatePassword('Ab1!', { minLength: 4 }), 'Ab1!')
  t.throws(() => validatePassword('x', { minLength: 0 }), TypeError)
  // Length counts characters (code points): 7 emoji + "Ab1!" is 11 characters though 18 UTF-16 units.
  rejects(
    t,
    () => validatePassword('😀😀😀😀😀😀😀Ab1!', { minLength: 12 }),
    'password',
    'Password must be at least 12 characters',
  )
})

t.test('password: every special character of the spec is accepted, others are not', async (t) => {
  for (const ch of [
    '!',
    '@',
    '#',
    '$',
    '%',
    '^',
    '&',
    '*',
    '(',
    ')',
    ',',
    '.',
    '?',
    ':',
    '{',
    '}',
    '|',
    '<',
    '>',
    '"',
  ]) {
    t.equal(validatePassword(`Abcdef1${ch}`), `Abcdef1${ch}`, ch)
  }
  for (const ch of ['-', '_', '+', '=', '[', ']', ';', "'", '/', '\\', '~', '`', ' ', '€']) {
    rejects(
      t,
      () => validatePassword(`Abcdef1${ch}`),
      'password',
      'Password must contain at least one special character',
      ch,
    )
  }
})

t.test('password: the message is the first failing rule; details list every failing rule', async (t) => {
  const err = errorOf(() => validatePassword('abc'))
  t.equal(err.message, 'Password must be at least 8 characters')
  t.same(err.details, [
    { field: 'password', message: 'Password must be at least 8 characters' },
    { field: 'password', message: 'Password must contain at least one uppercase letter' },
    { field: 'password', message: 'Password must contain at least one number' },
    { field: 'password', message: 'Password must contain at least one special character' },
  ])
  t.same(passwordProblems('Abcdef1!'), [])
  t.same(passwordProblems(12345678), passwordProblems(''), 'a non-string is checked as an empty password')
  const nonString = errorOf(() => validatePassword(undefined))
  t.equal(nonString.message, 'Password must be at least 8 characters')
  t.equal(nonString.details.length, 5)
})

t.test('file extension: allowed list, compared in lower case', async (t) => {
  t.same(ALLOWED_FILE_EXTENSIONS, ['.jpg', '.jpeg', '.png', '.gif', '.pdf', '.doc', '.docx'])
  for (const ok of [
    'a.jpg',
    'a.JPEG',
    'photo.Png',
    'x.gif',
    'report.PDF',
    'w.doc',
    'w.docx',
    'archive.tar.pdf',
    '.jpg',
  ]) {
    t.equal(validateFileExtension(ok), ok, ok)
  }
  for (const bad of [
    'a.exe',
    'a.jpg.exe',
    'a',
    'jpg',
    'a.jpgx',
    'a.php',
    'a.',
    '',
    'a.svg',
    'a.html',
    'a.jp g',
  ]) {
    rejects(t, () => validateFileExtension(bad), 'filename', 'File type not allowed', JSON.stringify(bad))
  }
  rejects(t, () => validateFileExtension(undefined), 'filename', 'File type not allowed', 'undefined')
})

t.test('file size: at most 10 MiB', async (t) => {
  t.equal(MAX_FILE_SIZE, 10 * 1024 * 1024)
  t.equal(validateFileSize(0), 0)
  t.equal(validateFileSize(10 * 1024 * 1024), 10485760)
  rejects(t, () => validateFileSize(10 * 1024 * 1024 + 1), 'size', 'File size exceeds limit')
  rejects(t, () => validateFileSize(Number.MAX_SAFE_INTEGER), 'size', 'File size exceeds limit')
  for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '100', null]) {
    rejects(t, () => validateFileSize(bad), 'size', 'File size is invalid', String(bad))
  }
})

t.test('file content: first 1024 bytes contain neither <script nor javascript:', async (t) => {
  const message = 'File contains potentially malicious content'
  validateFileContent(Buffer.from('%PDF-1.4 plain content'))
  validateFileContent('hello world')
  validateFileContent(new Uint8Array([0xff, 0xd8, 0xff, 0xe0]))
  rejects(t, () => validateFileContent(Buffer.from('<html><script>alert(1)</script>')), 'content', message)
  rejects(t, () => validateFileContent('<a href="javascript:alert(1)">'), 'content', message)
  rejects(t, () => validateFileContent(Buffer.from('<SCRIPT src=x>')), 'content', message, 'case-insensitive')
  rejects(
    t,
    () => validateFileContent(Buffer.from('JavaScript:void(0)')),
    'content',
    message,
    'case-insensitive',
  )
  // Position: a pattern that ends by byte 1024 is found; one starting at byte 1024 or later is not scanned.
  const endsAt1024 = Buffer.concat([Buffer.alloc(1024 - 7, 0x20), Buffer.from('<script')])
  rejects(t, () => validateFileContent(endsAt1024), 'content', message, 'ends at byte 1024')
  validateFileContent(Buffer.concat([Buffer.alloc(1024, 0x20), Buffer.from('<script>')]))
  validateFileContent(Buffer.concat([Buffer.alloc(1020, 0x20), Buffer.from('<script>')])) // straddles byte 1024
  // A Uint8Array view into a larger buffer is read from its own offset.
  const big = Buffer.concat([Buffer.from('<script>'), Buffer.alloc(10, 0x20)])
  validateFileContent(new Uint8Array(big.buffer, big.byteOffset + 8, 10))
  // Strings are measured in UTF-8 bytes: 600 × "é" is 1200 bytes, so a pattern after them is not scanned.
  validateFileContent(`${'é'.repeat(600)}<script>`)
  rejects(t, () => validateFileContent(`${'é'.repeat(500)}<script>`), 'content', message)
  // Invalid UTF-8 around the pattern cannot hide it.
  rejects(
    t,
    () => validateFileContent(Buffer.from([0xc3, 0x3c, 0x73, 0x63, 0x72, 0x69, 0x70, 0x74])),
    'content',
    message,
  )
  rejects(t, () => validateFileContent(42), 'content', message, 'not bytes')
})

// Long adversarial inputs finish: every check is linear. No timing assertion, only a generous timeout.
import {
  isEmail,
  passwordProblems,
  sanitize,
  validateFileContent,
  validateFileExtension,
  validateUsername,
} from '@trivium/validation'
import t from 'tap'

const N = 100_000
const inputs: Record<string, string> = {
  'a…': 'a'.repeat(N),
  'a…!': `${'a'.repeat(N)}!`,
  'a@ + a…!': `a@${'a'.repeat(N)}!`,
  'a@ + .a…1': `a@${'.a'.repeat(N / 2)}1`,
  'a@a. + a…!': `a@a.${'a'.repeat(N)}!`,
  '@ + a.… ': `${'a.'.repeat(N / 2)}@${'a.'.repeat(N / 2)} `,
  'many @': '@'.repeat(N),
  'onononon…': 'on'.repeat(N / 2),
  'on a…': `on${'a'.repeat(N)}`,
  'on + spaces': `ona${' '.repeat(N)}x`,
  'ona ona …': 'ona '.repeat(N / 4),
  'onx= …': 'onx='.repeat(N / 4),
  '<script…': '<script'.repeat(N / 7),
  'select select …': 'select '.repeat(N / 7),
  'selectselect…': 'select'.repeat(N / 6),
  mixed: '<a onclick= javascript:SELECT<iframe '.repeat(N / 37),
  spaces: `${' '.repeat(N)}x${' '.repeat(N)}`,
  entities: `&<>"'`.repeat(N / 5),
  dots: '.'.repeat(N),
}

t.test('100k-character adversarial inputs complete', { timeout: 60_000 }, async (t) => {
  for (const [name, input] of Object.entries(inputs)) {
    t.type(isEmail(input), 'boolean', `isEmail ${name}`)
    t.type(sanitize(input), 'string', `sanitize ${name}`)
    t.ok(Array.isArray(passwordProblems(input)), `password ${name}`)
    t.throws(() => validateUsername(input), { code: 'TRV_VALIDATION' }, `username ${name}`)
    try {
      validateFileExtension(input)
    } catch {}
    try {
      validateFileContent(input)
    } catch {}
  }
  t.equal(sanitize('on'.repeat(N / 2)).length, N, 'no handler pattern in "ononon…"')
  t.equal(isEmail(`${'a'.repeat(N)}@${'b'.repeat(N)}.com`), true, 'a long valid address is still valid')
})

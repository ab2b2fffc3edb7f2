import { createHmac } from 'node:crypto'
import { InvalidArgumentError, totp } from '@trivium/crypto'
import t from 'tap'

// RFC 6238 appendix B, SHA-1, secret = ASCII "12345678901234567890" (base32 below), last 6 of the 8 digits.
const RFC_SECRET = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ'
const RFC_VECTORS: Array<[number, string]> = [
  [59, '287082'],
  [1111111109, '081804'],
  [1111111111, '050471'],
  [1234567890, '005924'],
  [2000000000, '279037'],
  [20000000000, '353130'],
]

// An independent reference: HMAC-SHA1 over the 8-byte big-endian counter, dynamic truncation, 6 digits.
function reference(secretAscii: string, unixSeconds: number, step = 30): string {
  const counter = Buffer.alloc(8)
  counter.writeBigUInt64BE(BigInt(Math.floor(unixSeconds / step)))
  const mac = createHmac('sha1', Buffer.from(secretAscii, 'ascii')).update(counter).digest()
  const offset = mac[mac.length - 1]! & 0x0f
  const bin = mac.readUInt32BE(offset) & 0x7fffffff
  return String(bin % 1_000_000).padStart(6, '0')
}

t.test('RFC 6238 SHA-1 vectors (6 digits, zero-padded)', async (t) => {
  for (const [seconds, code] of RFC_VECTORS) {
    t.equal(totp.generate(RFC_SECRET, { at: seconds * 1000 }), code, `T=${seconds}`)
    t.equal(reference('12345678901234567890', seconds), code, `reference T=${seconds}`)
    t.equal(totp.verify(code, RFC_SECRET, { at: seconds * 1000 }), true, `verify T=${seconds}`)
  }
})

t.test('secret accepted in lower case, with spaces and padding', async (t) => {
  const at = 59_000
  t.equal(totp.generate(RFC_SECRET.toLowerCase(), { at }), '287082')
  t.equal(totp.generate('GEZD GNBV GY3T QOJQ GEZD GNBV GY3T QOJQ', { at }), '287082')
  t.equal(totp.verify('287082', `${RFC_SECRET.toLowerCase()}`, { at }), true)
})

t.test('custom step', async (t) => {
  const at = 1111111109 * 1000
  t.equal(totp.generate(RFC_SECRET, { at, step: 60 }), reference('12345678901234567890', 1111111109, 60))
  t.equal(totp.verify(totp.generate(RFC_SECRET, { at, step: 60 }), RFC_SECRET, { at, step: 60 }), true)
})

t.test('window edges: -1, 0, +1 accepted, ±2 rejected (default window 1)', async (t) => {
  const secret = totp.generateSecret()
  const stepStart = 1_700_000_010 * 1000 // a multiple of 30 s
  t.equal((stepStart / 1000) % 30, 0)
  for (const now of [stepStart, stepStart + 29_999]) {
    for (const offset of [-2, -1, 0, 1, 2]) {
      const code = totp.generate(secret, { at: now + offset * 30_000 })
      const expected = Math.abs(offset) <= 1
      // Guard against a chance collision of a 6-digit code with an accepted neighbour.
      const accepted = [-1, 0, 1].map((o) => totp.generate(secret, { at: now + o * 30_000 }))
      if (!expected && accepted.includes(code)) continue
      t.equal(totp.verify(code, secret, { at: now }), expected, `offset ${offset} at +${now - stepStart} ms`)
    }
  }
  // window 0: only the current step; window 2: ±2 accepted.
  const now = stepStart + 15_000
  const prev = totp.generate(secret, { at: now - 30_000 })
  if (prev !== totp.generate(secret, { at: now })) {
    t.equal(totp.verify(prev, secret, { at: now, window: 0 }), false)
  }
  t.equal(totp.verify(totp.generate(secret, { at: now - 60_000 }), secret, { at: now, window: 2 }), true)
})

t.test('a wrong code is false (otplib verify returns an object, not a boolean)', async (t) => {
  const at = 59_000
  t.equal(totp.verify('287083', RFC_SECRET, { at }), false)
  t.equal(totp.verify('000000', RFC_SECRET, { at }), false)
  t.equal(totp.verify('287082', totp.generateSecret(), { at }), false)
})

t.test('malformed codes and secrets are false, never a throw', async (t) => {
  const at = 59_000
  for (const code of [
    '',
    '28708',
    '2870822',
    '28708a',
    ' 287082',
    '287082 ',
    '２８７０８２',
    '-28708',
    '2.8708',
  ]) {
    t.equal(totp.verify(code, RFC_SECRET, { at }), false, JSON.stringify(code))
  }
  t.equal(totp.verify(287082 as unknown as string, RFC_SECRET, { at }), false)
  t.equal(totp.verify(null as unknown as string, RFC_SECRET, { at }), false)
  for (const secret of ['', 'not base32!', 'GEZDGNBV', '1111', 'A'.repeat(5000)]) {
    t.equal(totp.verify('287082', secret, { at }), false, `secret ${secret.slice(0, 12)}`)
  }
  t.equal(totp.verify('287082', undefined as unknown as string, { at }), false)
})

t.test('bad options and bad secrets on generate throw InvalidArgumentError', async (t) => {
  t.throws(() => totp.generate('not base32!'), InvalidArgumentError)
  t.throws(() => totp.generate('GEZDGNBV'), { code: 'TRV_CRYPTO_INVALID_ARGUMENT' }) // 5 bytes < 16
  t.throws(() => totp.generate(RFC_SECRET, { step: 0 }), InvalidArgumentError)
  t.throws(() => totp.generate(RFC_SECRET, { at: Number.NaN }), InvalidArgumentError)
  t.throws(() => totp.verify('287082', RFC_SECRET, { window: -1 }), InvalidArgumentError)
})

t.test('generateSecret: 32 base32 characters (20 bytes), different each time', async (t) => {
  const a = totp.generateSecret()
  const b = totp.generateSecret()
  t.match(a, /^[A-Z2-7]{32}$/)
  t.not(a, b)
  t.match(totp.generate(a), /^\d{6}$/)
  t.equal(totp.verify(totp.generate(a), a), true)
})

t.test('keyUri: otpauth:// URI for authenticator apps', async (t) => {
  const uri = totp.keyUri({ secret: RFC_SECRET, accountName: 'john@example.com', issuer: 'ACME Co' })
  t.equal(uri, `otpauth://totp/ACME%20Co:john%40example.com?secret=${RFC_SECRET}&issuer=ACME%20Co`)
  const parsed = new URL(uri)
  t.equal(parsed.protocol, 'otpauth:')
  t.equal(parsed.searchParams.get('secret'), RFC_SECRET)
  t.throws(() => totp.keyUri({ secret: 'bad!', accountName: 'a', issuer: 'b' }), InvalidArgumentError)
  t.throws(() => totp.keyUri({ secret: RFC_SECRET, accountName: '', issuer: 'b' }), InvalidArgumentError)
})

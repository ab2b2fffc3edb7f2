import { generateSecureToken, InvalidArgumentError, InvalidKeyError, Signer } from '@trivium/crypto'
import t from 'tap'

t.test('HMAC-SHA256 hex digest (RFC 4231 vectors)', async (t) => {
  // RFC 4231 test case 2
  t.equal(
    new Signer('Jefe').sign('what do ya want for nothing?'),
    '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
  )
  // Well-known: key "key", "The quick brown fox jumps over the lazy dog"
  t.equal(
    new Signer('key').sign('The quick brown fox jumps over the lazy dog'),
    'f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8',
  )
})

t.test('verify recomputes and compares', async (t) => {
  const signer = new Signer('salt-123')
  const sig = signer.sign('user:42')
  t.match(sig, /^[0-9a-f]{64}$/)
  t.equal(signer.verify('user:42', sig), true)
  t.equal(signer.verify('user:42', sig.toUpperCase()), true, 'hex is case-insensitive')
  t.equal(signer.verify('user:43', sig), false)
  t.equal(new Signer('other-salt').verify('user:42', sig), false)
  const flipped = (sig[0] === '0' ? '1' : '0') + sig.slice(1)
  t.equal(signer.verify('user:42', flipped), false)
  t.equal(signer.sign(''), new Signer('salt-123').sign(''))
  t.equal(signer.sign('héllo ✓'), new Signer('salt-123').sign('héllo ✓'))
})

t.test('verify: wrong length, non-hex or non-string is false, never a throw', async (t) => {
  const signer = new Signer('salt-123')
  const sig = signer.sign('data')
  for (const bad of [
    '',
    sig.slice(0, 63),
    `${sig}0`,
    `${sig}00`,
    sig.slice(0, 62),
    `${sig.slice(0, 63)}g`,
    ' '.repeat(64),
  ]) {
    t.equal(signer.verify('data', bad), false, `length ${bad.length}`)
  }
  t.equal(signer.verify('data', 'x'.repeat(100_000)), false)
  t.equal(signer.verify('data', undefined as unknown as string), false)
  t.equal(signer.verify('data', 42 as unknown as string), false)
  t.equal(signer.verify(undefined as unknown as string, sig), false)
})

t.test('Signer: salt required, never printed', async (t) => {
  t.throws(() => new Signer(''), InvalidKeyError)
  t.throws(() => new Signer(undefined as unknown as string), { code: 'TRV_CRYPTO_INVALID_KEY' })
  const signer = new Signer('top-secret-salt')
  const { inspect } = await import('node:util')
  t.notMatch(inspect(signer), /top-secret-salt/)
  t.notMatch(JSON.stringify({ signer }), /top-secret-salt/)
  t.throws(() => signer.sign(42 as unknown as string), InvalidArgumentError)
})

t.test('generateSecureToken: URL-safe base64 of 32 bytes by default', async (t) => {
  const token = generateSecureToken()
  t.equal(token.length, 43, '32 bytes → 43 characters without padding')
  t.match(token, /^[A-Za-z0-9_-]+$/)
  t.equal(Buffer.from(token, 'base64url').length, 32)
  t.equal(generateSecureToken(16).length, 22)
  t.equal(Buffer.from(generateSecureToken(64), 'base64url').length, 64)
  const seen = new Set(Array.from({ length: 200 }, () => generateSecureToken()))
  t.equal(seen.size, 200)
  // Over many tokens every character stays in the URL-safe alphabet.
  t.match(Array.from({ length: 200 }, () => generateSecureToken(48)).join(''), /^[A-Za-z0-9_-]+$/)
  for (const bad of [0, -1, 1.5, Number.NaN, 1025, '32' as unknown as number]) {
    t.throws(() => generateSecureToken(bad), InvalidArgumentError, String(bad))
  }
})

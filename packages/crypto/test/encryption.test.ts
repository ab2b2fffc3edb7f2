import { randomBytes } from 'node:crypto'
import { inspect } from 'node:util'
import { DataEncryptor, DecryptionError, InvalidArgumentError, InvalidKeyError } from '@trivium/crypto'
import t from 'tap'

const KEY = randomBytes(32).toString('base64')
const OTHER_KEY = randomBytes(32).toString('base64')

function caught(fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  return undefined
}

t.test('round trip; output is <IV base64>:<ciphertext base64> with a fresh 16-byte IV', async (t) => {
  const enc = new DataEncryptor(KEY)
  for (const text of ['', 'hello', 'héllo ✓ 🌍', 'a:b:c', 'x'.repeat(100_000)]) {
    const payload = enc.encrypt(text)
    const [iv, body, ...rest] = payload.split(':')
    t.equal(rest.length, 0)
    t.equal(Buffer.from(iv!, 'base64').length, 16)
    t.equal(Buffer.from(iv!, 'base64').toString('base64'), iv)
    t.equal(Buffer.from(body!, 'base64').length, Buffer.byteLength(text) + 16, 'ciphertext + 16-byte GCM tag')
    t.equal(enc.decrypt(payload), text)
  }
  const a = enc.encrypt('same')
  const b = enc.encrypt('same')
  t.not(a, b, 'fresh IV each call')
  t.not(a.split(':')[0], b.split(':')[0])
})

t.test('wrong key length or bad base64 rejected in the constructor', async (t) => {
  for (const n of [0, 16, 24, 31, 33, 64]) {
    t.throws(() => new DataEncryptor(randomBytes(n).toString('base64')), InvalidKeyError, `${n} bytes`)
  }
  t.throws(() => new DataEncryptor(randomBytes(16).toString('base64')), {
    code: 'TRV_CRYPTO_INVALID_KEY',
    message: '@trivium/crypto: encryptionKey must decode to 32 bytes (AES-256), got 16',
  })
  t.throws(() => new DataEncryptor(`${KEY.slice(0, -4)}!!!!`), {
    message: '@trivium/crypto: encryptionKey is not valid base64',
  })
  t.throws(() => new DataEncryptor(undefined as unknown as string), {
    name: 'InvalidKeyError',
    message: '@trivium/crypto: encryptionKey must be a base64 string',
  })
  const err = caught(() => new DataEncryptor('not a key'))
  t.ok(err instanceof TypeError, 'InvalidKeyError is a TypeError')
  t.ok(err instanceof InvalidKeyError)
})

t.test('the key is never printed', async (t) => {
  const enc = new DataEncryptor(KEY)
  t.notMatch(inspect(enc), KEY)
  t.notMatch(JSON.stringify({ enc }), KEY)
  try {
    new DataEncryptor(randomBytes(16).toString('base64'))
  } catch (err) {
    t.notMatch(String((err as Error).message), /[A-Za-z0-9+/]{20,}/)
  }
})

t.test('decrypt: argument error unless exactly two parts', async (t) => {
  const enc = new DataEncryptor(KEY)
  const good = enc.encrypt('hello')
  const [iv, body] = good.split(':')
  for (const bad of ['', 'abc', `${iv}`, `${good}:`, `${iv}:${body}:${body}`, `:${iv}:${body}`]) {
    t.throws(() => enc.decrypt(bad), InvalidArgumentError, JSON.stringify(bad))
  }
  t.throws(() => enc.decrypt('abc'), {
    code: 'TRV_CRYPTO_INVALID_ARGUMENT',
    message: 'Invalid encrypted payload: expected exactly two parts "<IV base64>:<ciphertext base64>", got 1',
  })
  t.ok(caught(() => enc.decrypt(`${good}:x`)) instanceof TypeError, 'argument errors are TypeErrors')
  t.throws(() => enc.decrypt(42 as unknown as string), InvalidArgumentError)
})

t.test('decrypt: strict base64 and lengths', async (t) => {
  const enc = new DataEncryptor(KEY)
  const [iv, body] = enc.encrypt('hello').split(':') as [string, string]
  const ivMessage = 'Invalid encrypted payload: the IV must be base64 of 16 bytes'
  const bodyMessage = 'Invalid encrypted payload: the ciphertext must be base64 of at least 16 bytes'
  t.throws(() => enc.decrypt(`:${body}`), { message: ivMessage })
  t.throws(() => enc.decrypt(`${iv.slice(0, -1)}!:${body}`), { message: ivMessage }, 'char outside alphabet')
  t.throws(() => enc.decrypt(`${iv} :${body}`), { message: ivMessage }, 'whitespace')
  t.throws(
    () => enc.decrypt(`${randomBytes(12).toString('base64')}:${body}`),
    { message: ivMessage },
    '12-byte IV',
  )
  t.throws(() => enc.decrypt(`${iv.replace(/=+$/, '')}:${body}`), { message: ivMessage }, 'missing padding')
  t.throws(() => enc.decrypt(`${randomBytes(16).toString('base64url')}A:${body}`), { message: ivMessage })
  t.throws(() => enc.decrypt(`${iv}:`), { message: bodyMessage })
  t.throws(
    () => enc.decrypt(`${iv}:${randomBytes(15).toString('base64')}`),
    { message: bodyMessage },
    'shorter than the tag',
  )
  t.throws(() => enc.decrypt(`${iv}:${body}%%`), { message: bodyMessage })
  // Non-canonical base64 (trailing bits set) that Node would silently accept.
  const nonCanonical = `${iv.slice(0, 21)}B==`
  t.not(Buffer.from(nonCanonical, 'base64').toString('base64'), nonCanonical)
  t.throws(() => enc.decrypt(`${nonCanonical}:${body}`), { message: ivMessage })
})

t.test('tampering and the wrong key fail with a clear error, never with plaintext', async (t) => {
  const enc = new DataEncryptor(KEY)
  const payload = enc.encrypt('pay 10 EUR to alice')
  const [iv, body] = payload.split(':') as [string, string]
  const flip = (b64: string, index: number) => {
    const bytes = Buffer.from(b64, 'base64')
    bytes[index]! ^= 0x01
    return bytes.toString('base64')
  }
  const message = 'Decryption failed: the data was tampered with or the key is wrong'
  t.throws(
    () => enc.decrypt(`${flip(iv, 0)}:${body}`),
    { code: 'TRV_CRYPTO_DECRYPT_FAILED', message },
    'IV bit',
  )
  t.throws(() => enc.decrypt(`${iv}:${flip(body, 0)}`), DecryptionError, 'ciphertext bit')
  const bodyLen = Buffer.from(body, 'base64').length
  t.throws(() => enc.decrypt(`${iv}:${flip(body, bodyLen - 1)}`), DecryptionError, 'tag bit')
  t.throws(
    () => enc.decrypt(`${iv}:${Buffer.from(body, 'base64').subarray(1).toString('base64')}`),
    DecryptionError,
  )
  t.throws(() => new DataEncryptor(OTHER_KEY).decrypt(payload), { message }, 'wrong key')
  // Swapping IVs between two messages fails too.
  const other = enc.encrypt('pay 10 EUR to alice')
  t.throws(() => enc.decrypt(`${other.split(':')[0]}:${body}`), DecryptionError)
  const err = (() => {
    try {
      enc.decrypt(`${iv}:${flip(body, 0)}`)
    } catch (e) {
      return e as Error
    }
    return undefined
  })()
  t.notMatch(String(err?.message), /alice/)
})

import { randomBytes } from 'node:crypto'
import triviumCrypto, {
  createCrypto,
  DataEncryptor,
  passwordWorkerCount,
  Signer,
  totp,
} from '@trivium/crypto'
import Fastify from 'fastify'
import t from 'tap'

const encryptionKey = randomBytes(32).toString('base64')
const hashSalt = 'pepper'

t.test('createCrypto binds the configured helpers', async (t) => {
  const c = createCrypto({ encryptionKey, hashSalt })
  t.type(c.encryptor, DataEncryptor)
  t.type(c.signer, Signer)
  t.equal(c.totp, totp)
  t.equal(c.encryptor.decrypt(c.encryptor.encrypt('x')), 'x')
  t.equal(c.signer.sign('a'), new Signer('pepper').sign('a'))
  t.match(c.generateSecureToken(), /^[A-Za-z0-9_-]{43}$/)
  t.throws(() => createCrypto({ encryptionKey: 'short', hashSalt }), { code: 'TRV_CRYPTO_INVALID_KEY' })
  t.throws(() => createCrypto({ encryptionKey, hashSalt: '' }), { code: 'TRV_CRYPTO_INVALID_KEY' })
  t.throws(() => createCrypto(undefined as never), { code: 'TRV_CRYPTO_INVALID_KEY' })
})

t.test('plugin decorates fastify.crypto and closes the worker pool', async (t) => {
  const app = Fastify()
  await app.register(triviumCrypto, { encryptionKey, hashSalt })
  await app.ready()
  const hash = await app.crypto.hashPassword('Secret1!')
  t.equal(await app.crypto.verifyPassword('Secret1!', hash), true)
  t.equal(app.crypto.encryptor.decrypt(app.crypto.encryptor.encrypt('hi')), 'hi')
  t.ok(passwordWorkerCount() > 0)
  await app.close()
  t.equal(passwordWorkerCount(), 0)
})

t.test('plugin: bad options fail registration without printing the key', async (t) => {
  const app = Fastify()
  app.register(triviumCrypto, { encryptionKey: randomBytes(16).toString('base64'), hashSalt })
  await t.rejects(async () => app.ready(), {
    code: 'TRV_CRYPTO_INVALID_KEY',
    message: '@trivium/crypto: encryptionKey must decode to 32 bytes (AES-256), got 16',
  })
  const app2 = Fastify()
  app2.register(triviumCrypto, {} as never)
  await t.rejects(async () => app2.ready(), { code: 'TRV_CRYPTO_INVALID_KEY' })
})

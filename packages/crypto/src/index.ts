// @trivium/crypto — the spec's cryptographic helpers (also alone, without Fastify: `@trivium/crypto/helpers`) and a
// Fastify plugin that decorates `fastify.crypto` with helpers configured from ENCRYPTION_KEY and HASH_SALT.
import { optionNames, refuseUnknownOptions } from '@trivium/wire'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { type CryptoConfig, createCrypto, type TriviumCrypto } from './helpers.js'
import { shutdownPasswordWorkers } from './password.js'

export * from './helpers.js'

export type TriviumCryptoOptions = CryptoConfig

declare module 'fastify' {
  interface FastifyInstance {
    crypto: TriviumCrypto
  }
}

/** Every option name of the plugin: any other is refused with the nearest one named. */
const CRYPTO_OPTIONS = optionNames<TriviumCryptoOptions>()('encryptionKey', 'hashSalt')

const plugin: FastifyPluginAsync<TriviumCryptoOptions> = async (fastify: FastifyInstance, options) => {
  refuseUnknownOptions('@trivium/crypto', options, CRYPTO_OPTIONS)
  fastify.decorate(
    'crypto',
    createCrypto({ encryptionKey: options.encryptionKey, hashSalt: options.hashSalt }),
  )
  fastify.addHook('onClose', async () => {
    await shutdownPasswordWorkers()
  })
}

export const triviumCrypto = fp(plugin, { fastify: '^5.12.1', name: '@trivium/crypto' })
export default triviumCrypto

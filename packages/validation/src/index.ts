// @trivium/validation — the spec's input checks (exact messages, core's ValidationException), sanitize,
// and a plugin that checks each endpoint's declared request fields before its handler on every transport.
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { checkDeclaration, validationMiddleware } from './middleware.js'

export * from './messages.js'
export {
  type CustomRule,
  checkCall,
  checkDeclaration,
  type FieldRule,
  type RuleName,
  type RuleSpec,
  validationMiddleware,
} from './middleware.js'
export * from './validators.js'

export interface TriviumValidationOptions {
  /** Middleware names that must run first (e.g. `['auth']`, so unauthenticated calls never see field errors). */
  after?: string[]
}

const plugin: FastifyPluginAsync<TriviumValidationOptions> = async (fastify: FastifyInstance, options) => {
  const after = options.after ?? []
  if (!Array.isArray(after) || after.some((name) => typeof name !== 'string')) {
    throw new TypeError('@trivium/validation: after must be a list of middleware names')
  }
  fastify.trivium.use(validationMiddleware(), { name: 'validation', after })
  fastify.addHook('onReady', async () => {
    for (const definition of fastify.trivium.registry.list())
      checkDeclaration(definition.name, definition.config)
  })
}

export const triviumValidation = fp(plugin, {
  fastify: '5.x',
  name: '@trivium/validation',
  dependencies: ['@trivium/core'],
})
export default triviumValidation

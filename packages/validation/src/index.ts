// @trivium/validation — the spec's input checks (exact messages, core's ValidationException), sanitize,
// and a plugin that checks each endpoint's declared request fields before its handler on every transport.
import { optionNames, refuseUnknownOptions } from '@trivium/core/internal'
import type { FastifyInstance, FastifyPluginAsync } from 'fastify'
import fp from 'fastify-plugin'
import { checkDeclaration, validationMiddleware } from './middleware.js'
import { SETUP } from './setup-errors.js'

export {
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
  PASSWORD_SPECIAL_CHARACTERS,
  PASSWORD_SPECIAL_MESSAGE,
  PASSWORD_UPPERCASE_MESSAGE,
  passwordLengthMessage,
  REQUIRED_MESSAGE,
  USERNAME_MAX_LENGTH,
  USERNAME_MESSAGE,
  USERNAME_MIN_LENGTH,
} from './messages.js'
export {
  type CustomRule,
  checkCall,
  type FieldRule,
  type RuleName,
  type RuleSpec,
  validationMiddleware,
} from './middleware.js'
export {
  encodeHtml,
  isEmail,
  type PasswordOptions,
  passwordProblems,
  sanitize,
  stripScriptPatterns,
  stripSqlKeywords,
  validateEmail,
  validateFileContent,
  validateFileExtension,
  validateFileSize,
  validatePassword,
  validateUsername,
} from './validators.js'

export interface TriviumValidationOptions {
  /** Middleware names that must run first (e.g. `['auth']`, so unauthenticated calls never see field errors). */
  after?: string[]
}

/** Every option name of the plugin: any other is refused with the nearest one named. */
const VALIDATION_OPTIONS = optionNames<TriviumValidationOptions>()('after')

const plugin: FastifyPluginAsync<TriviumValidationOptions> = async (fastify: FastifyInstance, options) => {
  refuseUnknownOptions('@trivium/validation', options, VALIDATION_OPTIONS)
  const after = options.after ?? []
  if (!Array.isArray(after) || after.some((name) => typeof name !== 'string')) {
    throw SETUP.TRV_VALIDATION_AFTER()
  }
  fastify.trivium.use(validationMiddleware(), { name: 'validation', after })
  fastify.addHook('onReady', async () => {
    for (const definition of fastify.trivium.registry.list())
      checkDeclaration(definition.name, definition.config)
  })
}

export const triviumValidation = fp(plugin, {
  fastify: '^5.12.1',
  name: '@trivium/validation',
  dependencies: ['@trivium/core'],
})
export default triviumValidation

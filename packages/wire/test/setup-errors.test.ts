// Issue 43 items 4 and 5: setup refusals are TypeErrors with a stable code, from one table per package; an
// unknown option name is refused with the nearest one, except the names Fastify itself passes to a plugin.
import {
  closestName,
  didYouMean,
  refuseUnknownOptions,
  SetupError,
  setupErrors,
  UNKNOWN_OPTION,
} from '@trivium/wire'
import t from 'tap'

t.test('a table builds TypeErrors with its codes and the package prefix', async (t) => {
  const SETUP = setupErrors('@trivium/example', {
    TRV_EXAMPLE_LIMIT: {
      when: 'limit is not a positive integer',
      message: (name: string) => `${name} must be a positive integer`,
    },
    TRV_EXAMPLE_OPTIONS: {
      when: 'the options are not an object',
      message: () => 'options must be an object',
    },
  })
  const err = SETUP.TRV_EXAMPLE_LIMIT('maxInFlight')
  t.ok(err instanceof TypeError)
  t.ok(err instanceof SetupError)
  t.equal(err.code, 'TRV_EXAMPLE_LIMIT')
  t.equal(err.message, '@trivium/example: maxInFlight must be a positive integer')
  t.equal(err.name, 'TypeError')
  t.equal(SETUP.TRV_EXAMPLE_OPTIONS().code, 'TRV_EXAMPLE_OPTIONS')
  t.same(Object.keys(SETUP), ['TRV_EXAMPLE_LIMIT', 'TRV_EXAMPLE_OPTIONS'], 'the rows are not a code')
  t.equal(SETUP.rows.TRV_EXAMPLE_LIMIT.when, 'limit is not a positive integer')
})

t.test(
  'unknown option names: refused with the nearest, Fastify’s own accepted at the top level',
  async (t) => {
    const known = ['notFoundHandler', 'errorHandler', 'bodyLimit']
    t.throws(() => refuseUnknownOptions('@trivium/core', { notFoundHandlr: false }, known), {
      code: UNKNOWN_OPTION,
      message: '@trivium/core: unknown option "notFoundHandlr" (did you mean "notFoundHandler"?)',
    })
    t.throws(() => refuseUnknownOptions('@trivium/x', { cors: 1 }, [], ''), {
      code: 'TRV_SETUP_UNKNOWN_OPTION',
      message: '@trivium/x: unknown option "cors"',
    })
    t.throws(() => refuseUnknownOptions('@trivium/x', { prefix: '/p' }, ['allowedOrigins'], 'cors.'), {
      message: '@trivium/x: unknown option "cors.prefix" (did you mean "allowedOrigins"?)',
    })
    t.doesNotThrow(() =>
      refuseUnknownOptions(
        '@trivium/core',
        { prefix: '/v1', logLevel: 'warn', logSerializers: {}, bodyLimit: 1 },
        known,
      ),
    )
    t.doesNotThrow(() => refuseUnknownOptions('@trivium/core', undefined, known))
    t.doesNotThrow(() => refuseUnknownOptions('@trivium/core', false, known))
  },
)

t.test('closestName and didYouMean', async (t) => {
  t.equal(closestName(['issuer', 'secret'], 'isuer'), 'issuer')
  t.equal(closestName([], 'x'), undefined)
  t.equal(didYouMean(['expose', 'path'], 'exposee'), ' (did you mean "expose"?)')
  t.equal(didYouMean([], 'x'), '')
})

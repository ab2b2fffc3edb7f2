// An endpoint whose request model validates asynchronously (a Standard Schema with async checks, issue 41):
// `call.body` is a promise until the checks settle, and the `validate`/`sanitize` rules apply to the settled
// value — never to the promise (which has none of the fields: every rule would answer "Field is required").
import trivium, { type StandardSchemaV1 } from '@trivium/core'
import triviumValidation from '@trivium/validation'
import Fastify from 'fastify'
import t from 'tap'

type Signup = { email: string; username: string; bio?: string }

/** A Standard Schema v1 whose check awaits (as a uniqueness lookup would): refuses a `taken` username. */
const AsyncSignup: StandardSchemaV1<Signup, Signup> = {
  '~standard': {
    version: 1,
    vendor: 'test',
    async validate(value) {
      await new Promise((resolve) => setImmediate(resolve))
      const v = value as Record<string, unknown>
      if (v.username === 'taken') return { issues: [{ message: 'is taken', path: ['username'] }] }
      return { value: v as Signup }
    },
  },
}

async function app() {
  const fastify = Fastify()
  await fastify.register(trivium)
  await fastify.register(triviumValidation)
  fastify.trivium.endpoint(
    'signup',
    {
      method: 'POST',
      url: '/signup',
      status: 201,
      request: AsyncSignup,
      validate: { email: 'email', username: 'username' },
      sanitize: ['bio'],
    },
    (req: Signup) => ({ username: req.username, bio: req.bio ?? null }),
  )
  await fastify.ready()
  return fastify
}

t.test('the rules run on the settled body: a valid one passes, cleaned', async (t) => {
  const fastify = await app()
  t.teardown(() => fastify.close())
  const res = await fastify.inject({
    method: 'POST',
    url: '/signup',
    payload: { email: 'ada@example.com', username: 'ada_l', bio: ' <b>hi</b> ' },
  })
  t.equal(res.statusCode, 201)
  t.same(res.json(), { username: 'ada_l', bio: '&lt;b&gt;hi&lt;/b&gt;' })
})

t.test("a rule's refusal names its field; the schema's own refusal comes first", async (t) => {
  const fastify = await app()
  t.teardown(() => fastify.close())
  const bad = await fastify.inject({
    method: 'POST',
    url: '/signup',
    payload: { email: 'not-an-email', username: 'ada_l' },
  })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), {
    code: 'TRV_VALIDATION',
    message: 'Invalid email format',
    details: [{ field: 'email', message: 'Invalid email format' }],
  })
  const taken = await fastify.inject({
    method: 'POST',
    url: '/signup',
    payload: { email: 'ada@example.com', username: 'taken' },
  })
  t.equal(taken.statusCode, 400)
  t.match(taken.json(), { code: 'TRV_VALIDATION', details: [{ field: 'username', message: 'is taken' }] })
})

import { redactingRequestSerializer } from '@trivium/core'
import { REDACTED, redactUrl, SECRET_QUERY_PARAMETERS } from '@trivium/core/internal'
import Fastify from 'fastify'
import t from 'tap'

t.test('redactUrl replaces the values of secret parameters only', async (t) => {
  t.equal(redactUrl('/ws?token=eyJ.a.b&format=json'), `/ws?token=${REDACTED}&format=json`)
  t.equal(
    redactUrl('/x?Token=1&to%6Ben=2&access_token=3'),
    `/x?Token=${REDACTED}&to%6Ben=${REDACTED}&access_token=${REDACTED}`,
  )
  t.equal(redactUrl('/x?token=a&token=b'), `/x?token=${REDACTED}&token=${REDACTED}`)
  t.equal(redactUrl('/x?tokens=a&mytoken=b&token'), '/x?tokens=a&mytoken=b&token', 'other names, no value')
  t.equal(redactUrl('/x?session=s&a=1', ['session']), `/x?session=${REDACTED}&a=1`, 'own list')
  t.equal(redactUrl('/plain/path'), '/plain/path')
  t.equal(redactUrl('/x?%E0%A4%A=1&password=p'), `/x?%E0%A4%A=1&password=${REDACTED}`, 'bad escapes kept')
  t.ok(SECRET_QUERY_PARAMETERS.includes('token'))
  t.throws(() => redactingRequestSerializer(['']), {
    code: 'TRV_CORE_SECRET_QUERY',
    message: '@trivium/core: secret query parameters must be non-empty strings',
  })
})

t.test('as the logger serializer, request lines carry the redacted url', async (t) => {
  const lines: string[] = []
  const app = Fastify({
    logger: {
      level: 'info',
      serializers: { req: redactingRequestSerializer() },
      stream: { write: (line: string) => lines.push(line) },
    },
  })
  app.get('/me', async () => ({ ok: true }))
  await app.inject('/me?token=secret-value&x=1')
  await app.close()
  const incoming = lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'incoming request')
  t.match(incoming.req, { method: 'GET', url: `/me?token=${REDACTED}&x=1` })
  t.notOk(lines.join('').includes('secret-value'))
})

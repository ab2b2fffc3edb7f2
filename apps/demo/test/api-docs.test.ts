// Swagger UI at /docs (issue 33): Trivium's own title and no top bar (Fastify's logo and link), the
// description said once, query parameters never typed null. Issue 44 item 10 changed one thing of issue 33:
// the document lists every way in, so `?token=` (which @trivium/auth accepts) has its scheme beside the
// bearer header, the header first.
import t from 'tap'
import { startDemo } from './helpers.js'

type Doc = {
  info: { title: string; description: string }
  components: { securitySchemes: Record<string, unknown> }
  paths: Record<
    string,
    Record<string, { security?: unknown[]; parameters?: { in: string; schema: { type: unknown } }[] }>
  >
}

// One demo for the file: both tests only read (a demo start is seconds of CPU).
const { app } = await startDemo(t)

t.test('the page: its own title, no top bar', async (t) => {
  const page = await app.inject('/docs/')
  t.equal(page.statusCode, 200)
  t.match(page.body, /<title>Trivium Tasks API<\/title>/)
  const init = await app.inject('/docs/static/swagger-initializer.js')
  t.match(
    init.body,
    /const config = \{[^}]*"layout":"BaseLayout"/,
    'BaseLayout: no top bar, no logo, no link away',
  )
})

t.test('the document: one description, bearer then ?token=, no null in query parameters', async (t) => {
  const doc = (await app.inject('/openapi.json')).json() as Doc
  t.equal(doc.info.title, 'Trivium Tasks')
  t.equal(
    doc.info.description,
    'The demo service of Trivium: users, roles and their tasks. WebSocket at /ws.\n\n' +
      'Every operation is a Trivium endpoint: the same endpoint is reachable over WebSocket and TCP by its ' +
      'name (the operationId), with the same request and response models.',
  )
  t.same(Object.keys(doc.components.securitySchemes), ['bearerAuth', 'tokenQuery'])
  const security = new Set<string>()
  const queryTypes: unknown[] = []
  for (const methods of Object.values(doc.paths))
    for (const op of Object.values(methods)) {
      for (const entry of op.security ?? [])
        for (const name of Object.keys(entry as object)) security.add(name)
      for (const p of op.parameters ?? []) if (p.in === 'query') queryTypes.push(p.schema.type)
    }
  t.same([...security], ['bearerAuth', 'tokenQuery'])
  t.ok(queryTypes.length >= 5, 'GET /tasks has its query parameters')
  t.same(
    queryTypes.filter((type) => Array.isArray(type) || type === 'null'),
    [],
    'no query parameter typed with null',
  )
})

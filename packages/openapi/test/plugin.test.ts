import trivium from '@trivium/core'
import openapi, { DOCS_CSP, escapeHtml } from '@trivium/openapi'
import { securityHeaders } from '@trivium/protections'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import t from 'tap'
import { describeRulesOnly, problemsOf, tasksApp } from './helpers.js'

const INFO = { title: 'Tasks <API>', version: '1.0.0' }

t.test('serves the document at /openapi.json once ready', async (t) => {
  const fastify = await tasksApp((f) => f.register(openapi, { info: INFO }))
  t.teardown(() => fastify.close())
  const res = await fastify.inject({ method: 'GET', url: '/openapi.json' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  const document = res.json()
  t.same(document, fastify.openapi())
  t.equal(document.info.title, 'Tasks <API>')
  t.same(await problemsOf(document), [])
  t.equal(document.paths['/tasks/{id}'].get.operationId, 'tasks.get')
  // no @trivium/auth registered: no security documented; no codec: no binary
  t.equal(document.components.securitySchemes, undefined)
  t.same(Object.keys(document.paths['/tasks/{id}'].delete.responses['200'].content), ['application/json'])
  // the plugin's own routes are not endpoints
  t.notOk(JSON.stringify(document.paths).includes('openapi.json'))
})

t.test('auth documented when @trivium/auth is registered, or when asked', async (t) => {
  const fakeAuth = fp(async () => {}, { name: '@trivium/auth' })
  const withAuth = await tasksApp(async (f) => {
    await f.register(fakeAuth)
    await f.register(openapi, { info: INFO })
  })
  t.teardown(() => withAuth.close())
  await withAuth.ready()
  t.ok(withAuth.openapi().components.securitySchemes?.bearerAuth)
  t.same(withAuth.openapi().paths['/health']?.get?.security, [])

  t.same(
    Object.keys(withAuth.openapi().components.securitySchemes ?? {}),
    ['bearerAuth', 'tokenQuery'],
    'the bearer header and ?token=, both accepted by @trivium/auth',
  )

  const headerOnly = await tasksApp((f) =>
    f.register(openapi, { info: INFO, auth: true, binary: true, tokenQuery: false }),
  )
  t.teardown(() => headerOnly.close())
  await headerOnly.ready()
  t.same(Object.keys(headerOnly.openapi().components.securitySchemes ?? {}), ['bearerAuth'], 'bearer only')
})

t.test('custom paths, servers, and no docs page with docsPath: false', async (t) => {
  const fastify = await tasksApp((f) =>
    f.register(openapi, {
      info: INFO,
      path: '/api/spec.json',
      docsPath: false,
      servers: [{ url: 'http://localhost:3000', description: 'local' }],
    }),
  )
  t.teardown(() => fastify.close())
  const res = await fastify.inject({ method: 'GET', url: '/api/spec.json' })
  t.equal(res.statusCode, 200)
  t.same(res.json().servers, [{ url: 'http://localhost:3000', description: 'local' }])
  t.equal((await fastify.inject({ method: 'GET', url: '/docs' })).statusCode, 404)
  t.equal((await fastify.inject({ method: 'GET', url: '/openapi.json' })).statusCode, 404)
})

t.test('the docs page: text/html, grouped endpoints, rights, schemas, nothing external', async (t) => {
  const fastify = await tasksApp((f) => f.register(openapi, { info: INFO, auth: true }))
  t.teardown(() => fastify.close())
  const res = await fastify.inject({ method: 'GET', url: '/docs' })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8')
  t.equal(res.headers['content-security-policy'], DOCS_CSP)
  const html = res.body
  t.match(html, /^<!DOCTYPE html>/)
  t.match(html, '<title>Tasks &lt;API&gt; 1.0.0</title>')
  for (const group of ['health', 'projects', 'tasks'])
    t.match(html, `<section id="group-${group}"><h2>${group}</h2>`)
  t.match(html, '<span class="m m-put">PUT</span><span class="path">/tasks/{id}</span>')
  t.match(html, '<span class="name">tasks.update</span>')
  t.match(html, '<dt>roles (any of)</dt><dd><code>admin</code></dd>')
  t.match(html, '<dt>permissions (any of)</dt><dd><code>tasks:write</code></dd>')
  t.match(html, '<dt>rate limit</dt><dd>10 requests per 60000 ms</dd>')
  t.match(html, '<dt>auth</dt><dd>public</dd>')
  t.match(html, '<dt>auth</dt><dd>optional (Bearer token or query <code>token</code>)</dd>')
  t.match(html, '<span class="badge">streaming</span>')
  t.match(html, '<a href="#schema-Task"><code>Task</code></a>')
  t.match(html, '<details id="schema-Project">')
  t.match(html, '<a href="/openapi.json">OpenAPI document (JSON)</a>')
  // self-contained: no script, no external URL, no stylesheet link
  t.notMatch(html, /<script/i)
  t.notMatch(html, /<link/i)
  t.notMatch(html, /\b(src|href)="(https?:)?\/\//i)
  t.notMatch(html, /@import|url\(/i)
  // the CSP allows exactly the inline stylesheet
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)?.[1] ?? ''
  const { createHash } = await import('node:crypto')
  t.match(DOCS_CSP, `style-src 'sha256-${createHash('sha256').update(style).digest('base64')}'`)
  t.match(DOCS_CSP, "default-src 'none'")
})

t.test('everything interpolated into the page is escaped', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  describeRulesOnly(fastify)
  await fastify.register(openapi, {
    info: { title: 'X', version: '1', description: '<img src=x onerror=alert(1)>' },
  })
  fastify.trivium.endpoint(
    'evil.one',
    {
      method: 'GET',
      url: '/evil',
      summary: 'Hello <script>alert("x")</script> & bye',
      permissions: ['"><script>p</script>'],
    } as any,
    () => ({}),
  )
  t.teardown(() => fastify.close())
  const html = (await fastify.inject({ method: 'GET', url: '/docs' })).body
  t.notMatch(html, /<script/i)
  t.notMatch(html, /<img/i)
  t.match(html, '<p>Hello &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; bye</p>')
  t.match(html, '<code>&quot;&gt;&lt;script&gt;p&lt;/script&gt;</code>')
  t.match(html, '&lt;img src=x onerror=alert(1)&gt;')
  t.equal(escapeHtml(`<a href='x'>&"`), '&lt;a href=&#39;x&#39;&gt;&amp;&quot;')
})

t.test("the page's CSP wins over the app's security headers", async (t) => {
  const fastify = await tasksApp(async (f) => {
    await f.register(securityHeaders)
    await f.register(openapi, { info: INFO })
  })
  t.teardown(() => fastify.close())
  const docs = await fastify.inject({ method: 'GET', url: '/docs' })
  t.equal(docs.headers['content-security-policy'], DOCS_CSP)
  t.equal(docs.headers['x-frame-options'], 'DENY')
  const json = await fastify.inject({ method: 'GET', url: '/openapi.json' })
  t.equal(json.headers['content-security-policy'], "default-src 'self'")
})

t.test('options are validated at registration', async (t) => {
  const cases: [unknown, string, string][] = [
    [undefined, '@trivium/openapi: info { title, version } is required', 'TRV_OPENAPI_INFO'],
    [
      { info: { version: '1' } },
      '@trivium/openapi: info.title must be a non-empty string',
      'TRV_OPENAPI_INFO_TITLE',
    ],
    [
      { info: { title: 'x', version: 1 } },
      '@trivium/openapi: info.version must be a non-empty string',
      'TRV_OPENAPI_INFO_VERSION',
    ],
    [
      { info: INFO, path: 'openapi.json' },
      '@trivium/openapi: path must be a path starting with "/" (no spaces, "?" or "#")',
      'TRV_OPENAPI_PATH',
    ],
    [
      { info: INFO, docsPath: true },
      '@trivium/openapi: docsPath must be a path starting with "/" (no spaces, "?" or "#")',
      'TRV_OPENAPI_PATH',
    ],
    [
      { info: INFO, docsPath: '/openapi.json' },
      '@trivium/openapi: path and docsPath must differ',
      'TRV_OPENAPI_DOCS_PATH',
    ],
    [
      { info: INFO, servers: [{}] },
      '@trivium/openapi: each server needs a url string',
      'TRV_OPENAPI_SERVER_URL',
    ],
    [
      { info: INFO, servers: 'x' },
      '@trivium/openapi: servers must be an array of { url, description? }',
      'TRV_OPENAPI_SERVERS',
    ],
    [{ info: INFO, auth: 'yes' }, '@trivium/openapi: auth must be a boolean', 'TRV_OPENAPI_FLAG'],
  ]
  for (const [options, message, code] of cases) {
    const fastify = Fastify()
    await fastify.register(trivium)
    await t.rejects(async () => fastify.register(openapi, options as any), { message, code }, message)
    await fastify.close()
  }
})

t.test('needs @trivium/core', async (t) => {
  const fastify = Fastify()
  await t.rejects(async () => fastify.register(openapi, { info: INFO }), /@trivium\/core/)
  await fastify.close()
})

t.test('the document is only available once ready', async (t) => {
  const fastify = Fastify()
  await fastify.register(trivium)
  await fastify.register(openapi, { info: INFO })
  t.throws(() => fastify.openapi(), {
    message: '@trivium/openapi: the document is built when the server is ready',
  })
  await fastify.ready()
  t.equal(fastify.openapi().openapi, '3.1.0')
  await fastify.close()
})

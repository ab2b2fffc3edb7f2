// Issue 16 item 12: the OpenAPI document says what the service checks. For every constrained field of
// every request, values at and around the document's boundaries (lengths from minLength/maxLength/
// maxItems, numbers from minimum/maximum, strings for each pattern) are sent over HTTP; the service must
// refuse (400) exactly the values the document calls invalid. Every status seen must be listed.
// Issue 29 item 8: the password's 72-byte bcrypt limit is in the document (`maxLength` for ASCII,
// `x-max-utf8-bytes` for the rest), a name that is taken is 409 on every transport and listed, and every
// status the service answers to hostile or unauthorized requests of each operation is listed.
import t from 'tap'
import { ADMIN, registerAndLogin, startDemo } from './helpers.js'
import { failure, transportClients } from './transports.js'

type Schema = Record<string, any>
type Doc = {
  paths: Record<string, Record<string, Schema>>
  components: {
    schemas: Record<string, Schema>
    responses?: Record<string, Schema>
    securitySchemes?: Record<string, Schema>
  }
}

const chars = (s: string) => [...s].length

/** The JSON Schema subset the document uses, applied to one value. */
function valid(schema: Schema, value: unknown): boolean {
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : []
  if (value === null) return types.includes('null')
  if (typeof value === 'string') {
    if (!types.includes('string')) return false
    if (schema.contentEncoding === 'base64') {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value) || value.length % 4 !== 0) return false
    }
    if (schema.minLength !== undefined && chars(value) < schema.minLength) return false
    if (schema.maxLength !== undefined && chars(value) > schema.maxLength) return false
    // What JSON Schema cannot say: a limit in UTF-8 bytes (bcrypt reads 72).
    const maxBytes = schema['x-max-utf8-bytes']
    if (maxBytes !== undefined && Buffer.byteLength(value) > maxBytes) return false
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) return false
    return true
  }
  if (typeof value === 'number') {
    if (!types.includes('integer') && !types.includes('number')) return false
    if (schema.minimum !== undefined && value < schema.minimum) return false
    if (schema.maximum !== undefined && value > schema.maximum) return false
    return true
  }
  if (Array.isArray(value)) {
    if (!types.includes('array')) return false
    if (schema.maxItems !== undefined && value.length > schema.maxItems) return false
    if (schema.minItems !== undefined && value.length < schema.minItems) return false
    return value.every((item) => valid(schema.items ?? {}, item))
  }
  return typeof value === 'boolean' && types.includes('boolean')
}

let unique = 0
/** A string of `length` characters that starts unique (names must not collide between cases). */
function uniqueText(length: number, fill = 'a'): string {
  const head = `u${(++unique).toString(36)}`
  return length <= head.length ? fill.repeat(Math.max(length, 0)) : head + fill.repeat(length - head.length)
}

/** Lengths around the document's limits. */
function lengths(schema: Schema, minItems = false): number[] {
  const lo = minItems ? schema.minItems : schema.minLength
  const hi = minItems ? schema.maxItems : schema.maxLength
  const out = new Set<number>([0, 1])
  if (lo !== undefined) for (const n of [lo - 1, lo]) if (n >= 0) out.add(n)
  if (hi !== undefined) for (const n of [hi, hi + 1]) out.add(n)
  return [...out].sort((a, b) => a - b)
}

/** Candidate values of a field from its schema: boundary lengths and numbers, and pattern probes. */
function candidates(field: string, schema: Schema): unknown[] {
  const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type]
  if (types.includes('integer')) {
    const out = new Set<number>([0, 1, -1])
    if (schema.minimum !== undefined) out.add(schema.minimum - 1).add(schema.minimum)
    if (schema.maximum !== undefined) out.add(schema.maximum).add(schema.maximum + 1)
    return [...out].filter((n) => n >= -(2 ** 31) && n <= 2 ** 31 - 1)
  }
  if (types.includes('array')) {
    const item = (i: number) => `tag${i}`
    const out: unknown[] = lengths(schema, true).map((n) => Array.from({ length: n }, (_, i) => item(i)))
    out.push(['ok', 'n\u0000'], [' '], [''])
    if (schema.items?.minimum !== undefined) out.push([0], [1])
    return out
  }
  if (schema.contentEncoding === 'base64') {
    const pdf = (size: number) => {
      const bytes = Buffer.alloc(size, 0x20)
      bytes.write('%PDF-1.4')
      return bytes.toString('base64')
    }
    // maxLength bounds the base64 text: 10485760 bytes are 13981016 characters, 3 bytes more 4 more.
    const max = Math.floor((schema.maxLength / 4) * 3) - 2
    return [pdf(8), pdf(max), pdf(max + 3), 'not base64!', 'QQ=', '']
  }
  // strings: lengths shaped for the field, then the probes every pattern is asked about
  const shaped = (n: number): string => {
    if (field === 'filename') return `${uniqueText(Math.max(n - 4, 0))}.pdf`.slice(-Math.max(n, 0)) || ''
    if (field === 'email') return n === 0 ? '' : `${uniqueText(Math.max(n - 12, 6))}@example.com`
    if (field === 'password') return `Aa1!${'b'.repeat(Math.max(n - 4, 0))}`.slice(0, n)
    return uniqueText(n)
  }
  const out: unknown[] = lengths(schema).map(shaped)
  out.push(
    `${shaped(5)}\u0000`,
    '   ',
    ` ${shaped(5)}`,
    `${shaped(5)} `,
    ` ${shaped(5)} `,
    '😀'.repeat(schema.maxLength ?? 5),
  )
  if (field === 'filename')
    out.push(
      'a.PDF',
      'a.jpeg',
      'a.JpG',
      'a.docx',
      'a.doc',
      'a.gif',
      'a.png',
      'a.exe',
      'a.pdf.exe',
      '.pdf',
      'pdf',
    )
  if (field === 'email')
    out.push('a@b.co', 'a@b.c', 'a@@b.co', 'a b@c.de', 'a@b-c.de', 'a@b.c0', 'a.b+c%d_e-f@x.y.zz', '@b.co')
  if (field === 'password')
    out.push(
      'Str0ng!Passw0rd',
      'str0ng!passw0rd',
      'STR0NG!PASSW0RD',
      'Strong!Password',
      'Str0ngPassw0rd',
      'Aa1"aaaa',
      // around 72 bytes with characters of 2 and 4 bytes (fewer than 72 characters)
      `Aa1!${'é'.repeat(34)}`,
      `Aa1!${'é'.repeat(35)}`,
      `Aa1!${'😀'.repeat(17)}`,
      `Aa1!${'😀'.repeat(17)}b`,
    )
  if (field === 'username') out.push('ab', 'abc', 'a-b-c', 'ab_c', 'Ab9', 'é_abc')
  if (field === 'cursor')
    out.push(
      Buffer.from('t:1').toString('base64url'),
      `${Buffer.from('t:10').toString('base64url')}==`,
      'a+b/',
    )
  return out
}

t.test('the OpenAPI document and the service agree on every field check', async (t) => {
  const demo = await startDemo(t)
  const { app } = demo
  const doc = (await app.inject('/openapi.json')).json() as Doc
  const admin = (await app.inject({ method: 'POST', url: '/auth/login', payload: ADMIN })).json()
  const auth = { authorization: `Bearer ${admin.accessToken}` }
  const alice = await registerAndLogin(app, 'alice')
  const task = (
    await app.inject({ method: 'POST', url: '/tasks', headers: auth, payload: { title: 'Existing' } })
  ).json()

  const operation = (name: string): [string, string, Schema] => {
    for (const [path, methods] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(methods))
        if (op.operationId === name) return [path, method, op]
    throw new Error(`no operation ${name}`)
  }
  /** The document's schema of one request field (query/path parameter or body property). */
  const fieldSchema = (op: Schema, field: string): Schema => {
    const parameter = (op.parameters ?? []).find((p: Schema) => p.name === field)
    if (parameter) return parameter.schema
    let body = op.requestBody.content['application/json'].schema
    if (body.$ref) body = doc.components.schemas[body.$ref.split('/').pop()]
    return body.properties[field]
  }

  let client = 0
  const send = (name: string, request: Record<string, unknown>) => {
    const [path, method] = operation(name)
    let url = path
    const rest: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(request)) {
      if (url.includes(`{${k}}`)) url = url.replace(`{${k}}`, encodeURIComponent(String(v)))
      else rest[k] = v
    }
    const hasBody = method === 'post' || method === 'put'
    if (!hasBody && Object.keys(rest).length > 0) {
      const query = new URLSearchParams()
      for (const [k, v] of Object.entries(rest))
        for (const item of Array.isArray(v) ? v : [v]) query.append(k, String(item))
      url += `?${query}`
    }
    client++
    return app.inject({
      method: method.toUpperCase() as 'GET',
      url,
      headers: auth,
      remoteAddress: `10.77.${client >> 8}.${client & 255}`,
      ...(hasBody ? { payload: rest as Record<string, string> } : {}),
    })
  }

  // A valid request per endpoint; each case changes one field.
  const bases: Record<string, () => Record<string, unknown>> = {
    'auth.register': () => ({
      username: uniqueText(8),
      email: `${uniqueText(6)}@example.com`,
      password: 'Str0ng!Passw0rd',
    }),
    'tasks.list': () => ({}),
    'tasks.get': () => ({ id: task.id }),
    'tasks.create': () => ({ title: 'A task', description: 'd', tags: ['x'] }),
    'tasks.update': () => ({ id: task.id, title: 'Renamed' }),
    'files.upload': () => ({ filename: 'a.pdf', contentType: 'application/pdf', data: 'JVBERi0xLjQ=' }),
    'admin.roles.create': () => ({ name: uniqueText(8), description: 'd', permissionIds: [1] }),
    'admin.roles.assign': () => ({ userId: alice.user.id, roleId: 1 }),
    'admin.roles.revoke': () => ({ userId: alice.user.id, roleId: 1 }),
    'admin.permissions.create': () => ({
      name: uniqueText(8),
      description: 'd',
      resource: 'r',
      action: 'read',
    }),
    // Last: it deletes (the other cases are done with `task` by then).
    'tasks.delete': () => ({ id: task.id }),
  }

  // Every operation whose request has a constrained field is compared: none is left out.
  const RULES = [
    'minLength',
    'maxLength',
    'pattern',
    'minimum',
    'maximum',
    'minItems',
    'maxItems',
    'x-max-utf8-bytes',
  ]
  const constrained = (schema: Schema | undefined): boolean =>
    schema !== undefined &&
    (RULES.some(
      (rule) => schema[rule] !== undefined && !(rule === 'maximum' && schema[rule] === 2147483647),
    ) ||
      constrained(schema.items))
  for (const methods of Object.values(doc.paths))
    for (const op of Object.values(methods)) {
      let body = op.requestBody?.content['application/json'].schema
      if (body?.$ref) body = doc.components.schemas[body.$ref.split('/').pop()]
      const fields = [
        // Headers (deadline, coding, idempotency key) are checked by the status sweep below.
        ...(op.parameters ?? []).filter((p: Schema) => p.in !== 'header').map((p: Schema) => p.schema),
        ...Object.values(body?.properties ?? {}),
      ] as Schema[]
      if (fields.some(constrained))
        t.ok(bases[op.operationId], `${op.operationId} has constrained fields: compared`)
    }

  let compared = 0
  for (const [name, base] of Object.entries(bases)) {
    const [, , op] = operation(name)
    const documented = Object.keys(op.responses)
    for (const field of Object.keys(base()).concat(name === 'tasks.list' ? ['limit', 'cursor', 'tag'] : [])) {
      const schema = fieldSchema(op, field)
      t.ok(schema, `${name}.${field} is documented`)
      for (const value of candidates(field, schema)) {
        const request = { ...base(), [field]: value }
        const expected = valid(schema, value)
        const res = await send(name, request)
        const shown =
          typeof value === 'string' && value.length > 40
            ? `${value.slice(0, 20)}… (${chars(value)})`
            : JSON.stringify(value)
        t.ok(documented.includes(String(res.statusCode)), `${name}: ${res.statusCode} is listed`)
        // A cursor is opaque: the document gives its alphabet; only the service's own cursors work.
        const opaque = field === 'cursor' && value !== Buffer.from('t:1').toString('base64url')
        if (expected && !opaque)
          t.not(
            res.statusCode,
            400,
            `${name}.${field} = ${shown}: documented valid (${res.body.slice(0, 120)})`,
          )
        else if (!expected) t.equal(res.statusCode, 400, `${name}.${field} = ${shown}: documented invalid`)
        compared++
      }
    }
  }
  t.ok(compared > 200, `${compared} values compared`)

  await t.test('the password byte limit: the message the document gives, on the field', async (t) => {
    const [, , op] = operation('auth.register')
    t.match(fieldSchema(op, 'password').description, /Password must be at most 72 bytes/)
    for (const password of [`Aa1!${'b'.repeat(69)}`, `Aa1!${'é'.repeat(35)}`]) {
      const res = await send('auth.register', { ...bases['auth.register']!(), password })
      t.same(
        [res.statusCode, res.json().message, res.json().details],
        [
          400,
          'Password must be at most 72 bytes',
          [{ field: 'password', message: 'Password must be at most 72 bytes' }],
        ],
        `${Buffer.byteLength(password)} bytes`,
      )
    }
  })

  await t.test('a name that is taken is 409 ConflictException on every transport, and listed', async (t) => {
    const roleName = uniqueText(8)
    const permissionName = uniqueText(8)
    t.equal(
      (await send('admin.roles.create', { ...bases['admin.roles.create']!(), name: roleName })).statusCode,
      201,
    )
    t.equal(
      (
        await send('admin.permissions.create', {
          ...bases['admin.permissions.create']!(),
          name: permissionName,
        })
      ).statusCode,
      201,
    )
    for (const name of ['admin.roles.create', 'admin.permissions.create']) {
      const [, , op] = operation(name)
      t.ok(op.responses['409'], `${name} lists 409`)
    }
    t.equal(
      doc.components.responses?.Conflict?.description?.startsWith('ConflictException (TRV_CONFLICT)'),
      true,
    )
    const again = await send('admin.roles.create', { ...bases['admin.roles.create']!(), name: roleName })
    t.same(
      [again.statusCode, again.json().code, again.json().error, again.json().message],
      [409, 'TRV_CONFLICT', 'ConflictException', `Role "${roleName}" already exists`],
    )
    for (const { name, client } of await transportClients(t, demo, admin.accessToken)) {
      t.same(
        await failure(
          client.call('admin.roles.create', { name: roleName, description: 'd', permissionIds: [] }),
        ),
        {
          statusCode: 409,
          kind: 'ConflictException',
          message: `Role "${roleName}" already exists`,
          details: undefined,
        },
        `${name} role`,
      )
      t.same(
        await failure(
          client.call('admin.permissions.create', {
            name: permissionName,
            description: 'd',
            resource: 'r',
            action: 'read',
          }),
        ),
        {
          statusCode: 409,
          kind: 'ConflictException',
          message: `Permission "${permissionName}" already exists`,
          details: undefined,
        },
        `${name} permission`,
      )
    }
  })

  await t.test('every status the service answers to each operation is listed', async (t) => {
    // Per operation: no token, a token without the rights, a missing id, a malformed, an empty, a
    // foreign-typed and an oversized body; whatever the service answers must be in the document.
    const member = { authorization: `Bearer ${alice.tokens.accessToken}` }
    let seen = 0
    for (const [path, methods] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(methods)) {
        if (op['x-trivium-streaming']) continue // SSE: 200 then events; its errors are the call's
        const url = path.replace(/\{[^}]+\}/g, '999999')
        const hasBody = method === 'post' || method === 'put'
        const attempts: Record<string, unknown>[] = [{}, { headers: member }, { headers: auth }]
        // Issue 44 item 10: the deadline header, refused or tiny; compressed bodies of an unknown coding
        // or corrupt data.
        attempts.push(
          { headers: { ...auth, 'trivium-timeout-ms': '0' } },
          { headers: { ...auth, 'trivium-timeout-ms': '1' } },
        )
        if (hasBody)
          attempts.push(
            {
              headers: { ...auth, 'content-type': 'application/json', 'content-encoding': 'compress' },
              payload: '{}',
            },
            {
              headers: { ...auth, 'content-type': 'application/json', 'content-encoding': 'gzip' },
              payload: 'not gzip data',
            },
          )
        if (hasBody)
          for (const headers of [member, auth])
            attempts.push(
              { headers: { ...headers, 'content-type': 'application/json' }, payload: '{"a":' },
              { headers: { ...headers, 'content-type': 'application/json' }, payload: '[]' },
              { headers: { ...headers, 'content-type': 'text/plain' }, payload: 'x' },
              {
                headers: { ...headers, 'content-type': 'application/json' },
                payload: `"${'a'.repeat(2 ** 21)}"`,
              },
            )
        for (const attempt of attempts) {
          client++
          const res = await app.inject({
            method: method.toUpperCase() as 'GET',
            url,
            remoteAddress: `10.79.${client >> 8}.${client & 255}`,
            ...attempt,
          })
          t.ok(
            Object.hasOwn(op.responses, String(res.statusCode)),
            `${op.operationId} ${res.statusCode} is listed (${res.body.slice(0, 80)})`,
          )
          seen++
        }
      }
    }
    t.ok(seen > 50, `${seen} answers checked`)
  })

  await t.test('an idempotency key used with another body is 422, and listed', async (t) => {
    const [, , op] = operation('tasks.create')
    t.ok(op.responses['409'], 'tasks.create lists 409 (the first call with the key still runs)')
    t.ok(op.responses['422'], 'tasks.create lists 422')
    // A fresh sign-in: the status sweep above logged the other tokens out (auth.logout).
    const { tokens } = await registerAndLogin(app, 'keyholder')
    const headers = { authorization: `Bearer ${tokens.accessToken}`, 'idempotency-key': 'contract-key-1' }
    const first = await app.inject({ method: 'POST', url: '/tasks', headers, payload: { title: 'A' } })
    t.equal(first.statusCode, 201)
    const other = await app.inject({ method: 'POST', url: '/tasks', headers, payload: { title: 'B' } })
    t.equal(other.statusCode, 422)
    t.equal(other.json().code, 'TRV_UNPROCESSABLE_CONTENT')
  })

  await t.test(
    'the client and bidirectional streams are documented with their HTTP/1.1 answer',
    async (t) => {
      for (const name of ['tasks.import', 'tasks.sync']) {
        const [path, method, op] = operation(name)
        t.equal(op['x-trivium-request-stream'], true, `${name} is a stream of requests`)
        t.same(Object.keys(op.responses), ['400'])
        const res = await app.inject({ method: method.toUpperCase() as 'POST', url: path, headers: auth })
        t.equal(res.statusCode, 400)
        t.equal(
          res.json().message,
          `Endpoint ${name} takes a stream of requests: call it over WebSocket or TCP`,
        )
      }
      t.ok(doc.components.securitySchemes?.tokenQuery, '?token= has its security scheme')
    },
  )

  await t.test('statuses only the handler knows are listed', async (t) => {
    for (const name of ['auth.login', 'auth.refresh']) {
      const [, , op] = operation(name)
      t.ok(op.responses['401'], `${name} lists 401`)
    }
    const login = await app.inject({
      method: 'POST',
      url: '/auth/login',
      payload: { username: 'alice', password: 'Wr0ng!Passw0rd' },
      remoteAddress: '10.78.0.1',
    })
    t.equal(login.statusCode, 401)
    const refresh = await app.inject({
      method: 'POST',
      url: '/auth/refresh',
      payload: { refreshToken: 'abc' },
      remoteAddress: '10.78.0.2',
    })
    t.equal(refresh.statusCode, 401)
  })
})

import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { generate, SchemaError } from '@trivium/codec/generator'
import t from 'tap'

const here = dirname(fileURLToPath(import.meta.url))
const pkg = join(here, '..')
const cli = join(pkg, 'dist', 'cli.js')

function problems(schema: string | object): string {
  try {
    generate(schema)
  } catch (err) {
    if (err instanceof SchemaError) return err.message
    throw err
  }
  throw new Error('expected a SchemaError')
}

const one = (fields: Record<string, string>) => ({ models: { A: fields, B: { y: 'int32' } } })

t.test('bad schemas: model, field and reason', async (t) => {
  t.equal(problems(one({ x: 'strin' })), 'model "A", field "x": unknown type "strin"')
  t.equal(problems(one({ x: '@C' })), 'model "A", field "x": unknown model reference "@C"')
  t.equal(
    problems(one({ x: 'B' })),
    'model "A", field "x": unknown type "B" (a model reference is written "@B")',
  )
  t.equal(
    problems(one({ x: '[int32' })),
    'model "A", field "x": malformed type expression "[int32": expected "]" at position 6',
  )
  t.equal(
    problems(one({ x: 'int32??' })),
    'model "A", field "x": malformed type expression "int32??": "??" at position 5: a type is nullable once',
  )
  t.equal(
    problems(one({ x: 'map<string int32>' })),
    'model "A", field "x": malformed type expression "map<string int32>": expected "," at position 11, found "i"',
  )
  t.equal(
    problems(one({ x: 'int32 x' })),
    'model "A", field "x": malformed type expression "int32 x": unexpected "x" at position 6',
  )
  t.equal(
    problems(one({ x: '' })),
    'model "A", field "x": malformed type expression "": expected a type at position 0',
  )
  t.equal(
    problems(one({ x: 'map<float64, string>' })),
    'model "A", field "x": map key type must be one of string, int32, int64, got "float64"',
  )
  t.equal(
    problems(one({ x: 'map<string?, string>' })),
    'model "A", field "x": map key type must be one of string, int32, int64, got "string?"',
  )
  t.equal(
    problems(one({ 'my-field': 'int32' })),
    'model "A", field "my-field": invalid field name: use letters, digits and _, not starting with a digit',
  )
  t.equal(
    problems(one({ equals: 'int32' })),
    'model "A", field "equals": invalid field name: "equals" is reserved',
  )
  t.equal(
    problems({ models: { '1A': {} } }),
    'model "1A": invalid model name: use letters, digits and _, starting with a letter',
  )
  t.equal(problems({ models: { Map: {} } }), 'model "Map": invalid model name: "Map" is reserved')
  t.equal(
    problems({ models: { A: {}, AData: {} } }),
    'model "AData": invalid model name: clashes with the generated type AData of model "A"',
  )
  t.equal(
    problems({ models: { A: { x: 5 } } }),
    'model "A", field "x": type expression must be a string (or { "type": "<expression>", …rules })',
  )
  t.equal(
    problems({ models: { A: [] } }),
    'model "A": a model must be an object mapping field names to type expressions',
  )
  t.equal(
    problems({ model: {} }),
    'unknown top-level key "model" (expected models, types, endpoints)\nschema must have a "models" object',
  )
  t.equal(
    problems('{"models": {"A": {"x": "int32", "x": "string"}}}'),
    'model "A", field "x": duplicate field',
  )
  t.equal(problems('{"models": {"A": {}, "A": {}}}'), 'model "A": duplicate model')
  t.match(problems('{"models": '), /^schema is not valid JSON: /)
  t.equal(
    problems(one({ x: 'strin', y: '@Nope', z: 'int32' })),
    'model "A", field "x": unknown type "strin"\nmodel "A", field "y": unknown model reference "@Nope"',
    'every problem is listed',
  )
  const err = (() => {
    try {
      generate(one({ x: 'strin' }))
    } catch (e) {
      return e as SchemaError
    }
    return undefined
  })()!
  t.same(err.problems, [{ model: 'A', field: 'x', reason: 'unknown type "strin"' }])
  t.equal(err.code, 'TRV_SCHEMA')
})

t.test('"rateLimit": false (never limited) passes through as a literal', async (t) => {
  const files = generate({
    models: { A: {} },
    endpoints: {
      health: { request: 'A', response: 'A', http: { method: 'GET', url: '/h' }, rateLimit: false },
    },
  })
  const server = files.find((f) => f.path === 'server.ts')?.contents ?? ''
  t.match(server, 'const config0 = { rateLimit: false as const }')
})

t.test('bad endpoints', async (t) => {
  const base = { models: { A: {} } }
  t.equal(
    problems({
      ...base,
      endpoints: { 'a.b': { request: '@X', response: 'A', http: { method: 'PATCH', url: 'x' } } },
    }),
    'endpoint "a.b": "request": unknown model "X"\nendpoint "a.b": "http.method" must be one of GET, POST, PUT, DELETE\nendpoint "a.b": "http.url" must be a path starting with "/"',
  )
  t.equal(
    problems({
      ...base,
      endpoints: {
        a: { request: 'A', response: 'A', http: { method: 'GET', url: '/a' } },
        'a.b': {
          request: 'A',
          response: 'A',
          http: { method: 'GET', url: '/b', status: 404 },
          auth: 'maybe',
          rateLimit: { requests: 0 },
        },
        '1x': {},
      },
    }),
    [
      'endpoint "a": name is also the namespace of "a.b" (the typed client cannot have both)',
      'endpoint "a.b": "http.status" must be a 2xx code',
      'endpoint "a.b": "auth" must be "public", "optional" or "required"',
      'endpoint "a.b": "rateLimit" must be { "requests": <positive integer>, "windowMs": <positive integer> } or false (not limited)',
      'endpoint "1x": invalid endpoint name: dot-separated segments of letters, digits, "_" and "-", each starting with a letter',
    ].join('\n'),
  )
  t.equal(
    problems({
      ...base,
      endpoints: {
        s: { request: 'A', response: 'A', streaming: true, http: { method: 'DELETE', url: '/s' } },
      },
    }),
    'endpoint "s": a streaming endpoint must use GET or POST',
  )
  t.equal(
    problems({
      ...base,
      endpoints: {
        u: { request: 'A', response: 'A', requestStream: true, http: { method: 'GET', url: '/u' } },
        v: { request: 'A', response: 'A', requestStream: 'yes', http: { method: 'POST', url: '/v' } },
      },
    }),
    [
      'endpoint "u": an endpoint with "requestStream" must use POST',
      'endpoint "v": "requestStream" must be a boolean',
    ].join('\n'),
  )
})

t.test('CLI: exit code 1 and the problems on stderr, no stack trace', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'trivium-codegen-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const bad = join(dir, 'bad.json')
  writeFileSync(bad, JSON.stringify(one({ x: 'strin', y: '[@Nope]' })))
  const r = spawnSync(process.execPath, [cli, bad, '--out', join(dir, 'out')], { encoding: 'utf8' })
  t.equal(r.status, 1)
  t.equal(
    r.stderr,
    `trivium-codegen: ${bad}: model "A", field "x": unknown type "strin"\ntrivium-codegen: ${bad}: model "A", field "y": unknown model reference "@Nope"\n`,
  )
  t.notMatch(r.stderr, /\n\s+at /)
  const missing = spawnSync(process.execPath, [cli, join(dir, 'none.json'), '--out', dir], {
    encoding: 'utf8',
  })
  t.equal(missing.status, 1)
  t.equal(missing.stderr, `trivium-codegen: cannot read ${join(dir, 'none.json')}: ENOENT\n`)
  const usage = spawnSync(process.execPath, [cli], { encoding: 'utf8' })
  t.equal(usage.status, 1)
  t.match(usage.stderr, /^usage: trivium-codegen <schema.json> --out <dir>/)
  const ok = spawnSync(
    process.execPath,
    [cli, join(here, 'schemas', 'evolution-v1.json'), '--out', join(dir, 'ok')],
    {
      encoding: 'utf8',
    },
  )
  t.equal(ok.status, 0)
  t.equal(ok.stdout, `trivium-codegen: wrote 4 files to ${join(dir, 'ok')}\n`)
  t.same(JSON.parse(readFileSync(join(dir, 'ok', 'schemas', 'Item.json'), 'utf8')), {
    title: 'Item',
    type: 'object',
    properties: {
      sku: { type: 'string' },
      qty: { type: 'integer', minimum: -2147483648, maximum: 2147483647 },
    },
    required: ['sku', 'qty'],
  })
})

t.test('the committed test models are what the generator produces now', async (t) => {
  for (const [schema, out] of [
    ['tasks.json', 'tasks'],
    ['evolution-v1.json', 'v1'],
    ['evolution-v2.json', 'v2'],
  ] as const) {
    for (const file of generate(readFileSync(join(here, 'schemas', schema), 'utf8'))) {
      const committed = readFileSync(join(here, 'generated', out, file.path), 'utf8')
      t.equal(committed, file.contents, `${out}/${file.path} is up to date (run \`pnpm generate:test\`)`)
    }
  }
})

// tsconfig.strict.json adds what a strict consumer turns on (issue 14 item 8): noUncheckedIndexedAccess,
// exactOptionalPropertyTypes, skipLibCheck off.
for (const config of ['tsconfig.json', 'tsconfig.strict.json'])
  t.test(
    `generated code type-checks (${config}); wrong handler and client types do not compile`,
    async (t) => {
      const tsc = join(pkg, '..', '..', 'node_modules', 'typescript', 'bin', 'tsc')
      // tsc runs none of the package's code: without a coverage run's NODE_V8_COVERAGE (~25 % less CPU).
      const { NODE_V8_COVERAGE: _coverage, ...env } = process.env
      const r = spawnSync(process.execPath, [tsc, '-p', join(here, config)], {
        encoding: 'utf8',
        cwd: pkg,
        env,
      })
      t.equal(r.stdout + r.stderr, '')
      t.equal(r.status, 0)
    },
  )

t.test('the runtime is browser-safe: no Node built-ins, no Buffer, no @trivium/core', async (t) => {
  for (const f of ['index', 'reader', 'writer', 'values', 'errors', 'custom', 'types']) {
    const code = readFileSync(join(pkg, 'dist', 'runtime', `${f}.js`), 'utf8')
      .replace(/\/\*[\s\S]*?\*\//g, '')
      .replace(/\/\/.*$/gm, '')
    const specifiers = [...code.matchAll(/\bfrom\s+['"]([^'"]+)['"]/g)].map((m) => m[1]!)
    t.ok(
      specifiers.every((s) => s.startsWith('./')),
      `runtime/${f}.js imports only its own files`,
    )
    t.notMatch(code, /\bimport\(|require\(|\bBuffer\b|\bprocess\./, `runtime/${f}.js uses no Node globals`)
  }
})

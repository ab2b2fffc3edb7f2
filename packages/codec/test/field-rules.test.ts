// Field rules: `{ "type": "<expr>", …JSON Schema keywords }` documents what a service checks on a
// field; the keywords go into the generated JSON Schema (and so into the OpenAPI document).
import { generate, SchemaError } from '@trivium/codec/generator'
import { isBase64, jBytes } from '@trivium/codec/runtime'
import t from 'tap'

const schemaOf = (fields: Record<string, unknown>) => ({ models: { A: fields } })
function jsonSchema(fields: Record<string, unknown>) {
  const file = generate(schemaOf(fields)).find((f) => f.path === 'schemas/A.json')!
  return JSON.parse(file.contents)
}
function problems(fields: Record<string, unknown>): string[] {
  try {
    generate(schemaOf(fields))
  } catch (err) {
    if (err instanceof SchemaError) return err.problems.map((p) => p.reason)
    throw err
  }
  return []
}

t.test('rules are written into the JSON Schema of the field', async (t) => {
  const s = jsonSchema({
    title: { type: 'string', minLength: 1, maxLength: 200, pattern: '\\S', description: 'Not blank' },
    note: { type: 'string?', maxLength: 10 },
    tags: { type: '[string]?', maxItems: 20, items: { maxLength: 30 } },
    id: { type: 'int32', minimum: 1 },
    data: { type: 'bytes', maxLength: 8 },
    plain: 'string',
    secret: { type: 'string', maxLength: 72, 'x-max-utf8-bytes': 72 },
  })
  t.same(s.properties.title, {
    type: 'string',
    minLength: 1,
    maxLength: 200,
    pattern: '\\S',
    description: 'Not blank',
  })
  t.same(s.properties.note, { type: ['string', 'null'], maxLength: 10 })
  t.same(s.properties.tags, {
    type: ['array', 'null'],
    items: { type: 'string', maxLength: 30 },
    maxItems: 20,
  })
  t.same(s.properties.id, { type: 'integer', minimum: 1, maximum: 2147483647 })
  t.same(s.properties.data, { type: 'string', contentEncoding: 'base64', maxLength: 8 })
  t.same(s.properties.secret, { type: 'string', maxLength: 72, 'x-max-utf8-bytes': 72 }, 'x- extensions too')
  t.same(s.required, ['title', 'id', 'data', 'plain', 'secret'])
})

t.test('a rule that does not fit its type or value is a schema problem', async (t) => {
  t.same(problems({ a: { type: 'int32', maxLength: 3 } }), ['rule "maxLength" does not apply to this type'])
  t.same(problems({ a: { type: 'string', minimum: 3 } }), ['rule "minimum" does not apply to this type'])
  t.same(problems({ a: { type: 'string', maxLength: -1 } }), ['maxLength must be a non-negative integer'])
  t.same(problems({ a: { type: 'string', pattern: '(' } }), ['pattern is not a valid regular expression'])
  t.same(problems({ a: { type: '[int32]', items: { pattern: 'x' } } }), [
    'items.rule "pattern" does not apply to this type',
  ])
  t.same(problems({ a: { maxLength: 3 } }), [
    'type expression must be a string (or { "type": "<expression>", …rules })',
  ])
})

t.test('base64 of a 10 MiB upload is checked without overflowing the stack', async (t) => {
  const text = Buffer.alloc(10 * 1024 * 1024 + 1, 7).toString('base64')
  t.ok(isBase64(text))
  t.equal(jBytes(text, [], '', 'data').byteLength, 10 * 1024 * 1024 + 1)
  for (const bad of ['QQ=', 'QQ=A', '====', 'A===', 'QUJD!', 'QU\nJD'])
    t.notOk(isBase64(bad), JSON.stringify(bad))
  for (const good of ['', 'QQ==', 'QUI=', 'QUJD', 'a+/9']) t.ok(isBase64(good), JSON.stringify(good))
})

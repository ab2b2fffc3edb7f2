import { DecodeError, ModelValidationError } from '@trivium/codec/runtime'
import type { Test } from 'tap'
import t from 'tap'
import { Containers, Empty, Optionals, Priced, Scalars, Tag, Task, Tree } from './generated/tasks/models.js'

const hex = (b: Uint8Array) =>
  Buffer.from(b)
    .toString('hex')
    .replace(/(..)(?!$)/g, '$1 ')
const _bytes = (h: string) => new Uint8Array(Buffer.from(h.replace(/\s+/g, ''), 'hex'))

function validation(
  t: Test,
  fn: () => unknown,
  message: string,
  details: { field: string; message: string }[],
) {
  try {
    fn()
    t.fail('expected a validation error')
  } catch (err) {
    t.equal((err as Error).message, message)
    t.equal((err as { code: string }).code, 'TRV_VALIDATION')
    t.equal((err as { statusCode: number }).statusCode, 400)
    t.same((err as { details: unknown }).details, details)
  }
}

const scalars = new Scalars({
  s: 'hé',
  i32: -2,
  i64: 9007199254740993n,
  f32: 1.5,
  f64: Number.NaN,
  b: true,
  dt: new Date(Date.UTC(2024, 0, 1)),
  raw: new Uint8Array([1, 2, 255]),
  dyn: { a: [1, 'x'] },
})

t.test('a model is a version byte, a 4-byte length, then its fields in declaration order', async (t) => {
  t.equal(hex(Tag.encode(new Tag({ name: 'a' }))), '01 06 00 00 00 01 00 00 00 61 00')
  t.equal(
    hex(Tag.encode({ name: 'a', color: 'b' })),
    '01 0b 00 00 00 01 00 00 00 61 01 01 00 00 00 62',
    'plain data encodes too',
  )
  t.equal(hex(Empty.encode({})), '01 00 00 00 00')
  t.equal(
    hex(Scalars.encode(scalars)),
    [
      '01', // format version
      '49 00 00 00', // model length 73
      '03 00 00 00 68 c3 a9', // s
      'fe ff ff ff', // i32
      '01 00 00 00 00 00 20 00', // i64 = 2^53 + 1
      '00 00 c0 3f', // f32
      '00 00 00 00 00 00 f8 7f', // f64 NaN
      '01', // b
      '00 f4 51 c2 8c 01 00 00', // dt (ms since epoch)
      '03 00 00 00 01 02 ff', // raw
      '07 01 00 00 00 01 00 00 00 61 06 02 00 00 00 03 01 00 00 00 05 01 00 00 00 78', // dyn
    ].join(' '),
  )
  const back = Scalars.decode(Scalars.encode(scalars))
  t.ok(back instanceof Scalars)
  t.ok(back.equals(scalars))
  t.equal(back.i64, 9007199254740993n, 'int64 beyond 2^53 is exact (bigint)')
  t.same(back.dyn, { a: [1, 'x'] })
})

t.test('optional fields: 0x00 for null, 0x01 + value', async (t) => {
  const none = new Optionals({})
  t.equal(hex(Optionals.encode(none)), '01 09 00 00 00 00 00 00 00 00 00 00 00 00')
  const some = new Optionals({ i32: 7, ref: new Tag({ name: 'x' }), list: [1] })
  t.equal(
    hex(Optionals.encode(some)),
    '01 1f 00 00 00 00 01 07 00 00 00 00 00 00 00 00 01 06 00 00 00 01 00 00 00 78 00 01 01 00 00 00 01 00 00 00',
  )
  t.ok(Optionals.decode(Optionals.encode(some)).equals(some))
  t.same(Optionals.toJSON(none), {
    s: null,
    i32: null,
    i64: null,
    f64: null,
    b: null,
    dt: null,
    raw: null,
    list: null,
  })
  t.notOk('ref' in Optionals.toJSON(none), 'a null optional reference is omitted from JSON')
  t.same(Optionals.toJSON(some).ref, { name: 'x', color: null })
})

t.test('lists and maps: 4-byte count, then items or key/value pairs', async (t) => {
  const c = new Containers({
    ints: [1, 2],
    nested: new Map([['a', [null, 3]]]),
    byId: new Map([[2n ** 62n, new Tag({ name: 't' })]]),
    byNum: new Map([[-1, 'neg']]),
    matrix: [[0.5], []],
    tags: [new Tag({ name: 'u', color: 'red' })],
    maybeTags: [null, new Tag({ name: 'v' })],
  })
  const enc = Containers.encode(c)
  t.equal(hex(enc.subarray(5, 17)), '02 00 00 00 01 00 00 00 02 00 00 00', 'ints')
  const back = Containers.decode(enc)
  t.ok(back.equals(c))
  t.equal(back.hashCode(), c.hashCode())
  t.same(Containers.toJSON(c), {
    ints: [1, 2],
    nested: { a: [null, 3] },
    byId: { '4611686018427387904': { name: 't', color: null } },
    byNum: { '-1': 'neg' },
    matrix: [[0.5], []],
    tags: [{ name: 'u', color: 'red' }],
    maybeTags: [null, { name: 'v', color: null }],
  })
  const json = JSON.parse(JSON.stringify(Containers.toJSON(c)))
  t.ok(Containers.fromJSON(json).equals(c), 'JSON round trip')
  // a duplicate map key in binary is refused
  const two = Containers.encode(
    c.copyWith({
      byNum: new Map([
        [1, 'a'],
        [2, 'a'],
      ]),
    }),
  )
  const at = Buffer.from(two).indexOf(Buffer.from('020000000100000061', 'hex'))
  const dup = two.slice()
  dup[at] = 1
  t.throws(() => Containers.decode(dup), new DecodeError(`duplicate map key at offset ${at}`, at))
})

t.test(
  'JSON form: int64 as decimal string, datetime ISO, bytes base64, non-finite floats as strings',
  async (t) => {
    const json = Scalars.toJSON(scalars)
    t.same(json, {
      s: 'hé',
      i32: -2,
      i64: '9007199254740993',
      f32: 1.5,
      f64: 'NaN',
      b: true,
      dt: '2024-01-01T00:00:00.000Z',
      raw: 'AQL/',
      dyn: { a: [1, 'x'] },
    })
    t.equal(JSON.stringify(scalars), JSON.stringify(json), 'instances have toJSON')
    const back = Scalars.fromJSON(JSON.parse(JSON.stringify(json)))
    t.ok(back.equals(scalars))
    t.equal(
      Scalars.fromJSON({ ...json, i64: 12 }).i64,
      12n,
      'a safe-integer JSON number is accepted for int64',
    )
    t.equal(
      Scalars.fromJSON({ ...json, f32: 0.1 }).f32,
      Math.fround(0.1),
      'float32 is rounded to float32 on input',
    )
    t.equal(Scalars.fromJSON({ ...json, f64: '-Infinity' }).f64, Number.NEGATIVE_INFINITY)
    t.same(Scalars.fromJSON({ ...json, dyn: undefined }).dyn, null, 'any: missing is null')
  },
)

t.test('fromJSON: ValidationException naming every bad field', async (t) => {
  validation(t, () => Tag.fromJSON(undefined), 'Invalid Tag: (body) must be object', [
    { field: '(body)', message: 'must be object' },
  ])
  validation(t, () => Tag.fromJSON([]), 'Invalid Tag: (body) must be object', [
    { field: '(body)', message: 'must be object' },
  ])
  validation(t, () => Tag.fromJSON({ color: 1 }), 'Invalid Tag: name is required', [
    { field: 'name', message: 'is required' },
    { field: 'color', message: 'must be string' },
  ])
  validation(
    t,
    () =>
      Scalars.fromJSON({
        s: null,
        i32: 2 ** 31,
        i64: 2 ** 60,
        f32: 'x',
        f64: 1,
        b: 'true',
        dt: '2024-13-01',
        raw: 'not base64!',
      }),
    'Invalid Scalars: s must not be null',
    [
      { field: 's', message: 'must not be null' },
      { field: 'i32', message: 'must be a 32-bit integer' },
      {
        field: 'i64',
        message: 'must be a decimal string when beyond ±2^53 (a JSON number would be rounded)',
      },
      { field: 'f32', message: 'must be number' },
      { field: 'b', message: 'must be boolean' },
      { field: 'dt', message: 'must be an RFC 3339 date-time string' },
      { field: 'raw', message: 'must be a base64 string' },
    ],
  )
  validation(
    t,
    () => Scalars.fromJSON({ ...Scalars.toJSON(scalars), i64: '9223372036854775808' }),
    'Invalid Scalars: i64 must be a 64-bit integer',
    [{ field: 'i64', message: 'must be a 64-bit integer' }],
  )
  validation(
    t,
    () =>
      Containers.fromJSON({
        ints: [1, 'two'],
        nested: { a: [null, 1.5] },
        byId: { x: { name: 'n' }, '5': {} },
        byNum: [],
        matrix: [[1], 'row'],
        tags: [{ name: 'ok' }, { name: 2 }],
        maybeTags: null,
      }),
    'Invalid Containers: ints.1 must be integer',
    [
      { field: 'ints.1', message: 'must be integer' },
      { field: 'nested.a.1', message: 'must be integer' },
      { field: 'byId.5.name', message: 'is required' },
      { field: 'byId.x', message: 'key must be a 64-bit integer' },
      { field: 'byNum', message: 'must be object' },
      { field: 'matrix.1', message: 'must be array' },
      { field: 'tags.1.name', message: 'must be string' },
      { field: 'maybeTags', message: 'must not be null' },
    ],
  )
  try {
    Tag.fromJSON({})
  } catch (err) {
    t.type(err, ModelValidationError, 'without the server entry, the runtime class (same shape as core)')
    t.equal((err as Error).name, 'ValidationException')
  }
})

t.test('equality, hashing and copyWith', async (t) => {
  const a = new Task({ id: 1n, title: 'a', done: false, tags: ['x'], due: new Date(5) })
  const b = new Task({ id: 1n, title: 'a', done: false, tags: ['x'], due: new Date(5) })
  t.ok(a.equals(b))
  t.equal(a.hashCode(), b.hashCode())
  t.notOk(a.equals(b.copyWith({ tags: ['y'] })))
  t.notOk(a.equals({ ...a }), 'equals compares instances of the same model')
  t.ok(Task.equalsValue(a, { ...a }), 'equalsValue compares data')
  const c = a.copyWith({ title: 'c', due: null })
  t.equal(c.title, 'c')
  t.equal(c.due, null, 'null clears a nullable field')
  t.equal(c.id, 1n, 'other fields are kept')
  t.equal(a.title, 'a', 'the original is unchanged')
  // floats: SameValueZero
  const nan1 = scalars.copyWith({ f64: Number.NaN })
  t.ok(nan1.equals(scalars), 'NaN equals NaN')
  t.equal(nan1.hashCode(), scalars.hashCode())
  t.ok(scalars.copyWith({ f64: 0 }).equals(scalars.copyWith({ f64: -0 })), '0 equals -0')
  t.equal(scalars.copyWith({ f64: 0 }).hashCode(), scalars.copyWith({ f64: -0 }).hashCode())
  t.ok(Object.is(Scalars.decode(Scalars.encode(scalars.copyWith({ f64: -0 }))).f64, -0), 'binary keeps -0')
  t.notOk(scalars.copyWith({ f64: 1 }).equals(scalars))
  t.notOk(scalars.copyWith({ raw: new Uint8Array([1, 2]) }).equals(scalars), 'bytes by content')
  t.ok(scalars.copyWith({ raw: new Uint8Array([1, 2, 255]) }).equals(scalars))
  t.ok(scalars.copyWith({ dt: new Date(Date.UTC(2024, 0, 1)) }).equals(scalars), 'dates by time')
  t.ok(scalars.copyWith({ dyn: { a: [1, 'x'] } }).equals(scalars), 'any: deep')
  const m1 = new Containers({
    ints: [],
    nested: new Map([
      ['a', []],
      ['b', [1]],
    ]),
    byId: new Map(),
    byNum: new Map(),
    matrix: [],
    tags: [],
    maybeTags: [],
  })
  const m2 = m1.copyWith({
    nested: new Map([
      ['b', [1]],
      ['a', []],
    ]),
  })
  t.ok(m1.equals(m2), 'maps: key order does not matter')
  t.equal(m1.hashCode(), m2.hashCode())
})

t.test('recursive models and the nesting limit', async (t) => {
  let tree = new Tree({ label: 'leaf', children: [] })
  for (let i = 0; i < 70; i++) tree = new Tree({ label: `n${i}`, children: [tree] })
  const enc = Tree.encode(tree)
  t.throws(() => Tree.decode(enc), { name: 'DecodeError', message: 'nesting deeper than 64 levels' })
  t.ok(Tree.decode(enc, { maxDepth: 100 }).equals(tree))
  t.same(Tree.jsonSchema.definitions, { Tree: { $ref: '#' } })
})

t.test('custom type: Money supplies its own binary read/write', async (t) => {
  const p = new Priced({
    item: 'pen',
    price: { currency: 'EUR', cents: 1234n },
    discounts: [{ currency: 'EUR', cents: -50n }],
  })
  const enc = Priced.encode(p)
  t.equal(hex(enc.subarray(12, 23)), '45 55 52 d2 04 00 00 00 00 00 00', 'currency ASCII + int64 cents')
  const back = Priced.decode(enc)
  t.ok(back.equals(p))
  t.same(Priced.toJSON(p), { item: 'pen', price: 'EUR 12.34', discounts: ['EUR -0.50'] })
  t.ok(Priced.fromJSON({ item: 'pen', price: 'EUR 12.34', discounts: ['EUR -0.50'] }).equals(p))
  validation(
    t,
    () => Priced.fromJSON({ item: 'pen', price: '12', discounts: [] }),
    'Invalid Priced: price must be money like "EUR 12.34"',
    [{ field: 'price', message: 'must be money like "EUR 12.34"' }],
  )
  const bad = enc.slice()
  bad[12] = 0x30
  t.throws(() => Priced.decode(bad), new DecodeError('invalid currency byte 48', 13))
})

t.test('generated models are Models: name, jsonSchema, fromJSON/toJSON, encode/decode', async (t) => {
  t.equal(Task.name, 'Task')
  t.same(Task.jsonSchema.required, ['id', 'title', 'done', 'tags'])
  t.same(Task.jsonSchema.properties?.id, {
    type: ['string', 'integer'],
    pattern: '^-?(0|[1-9][0-9]{0,18})$',
    format: 'int64',
  })
  t.same(Task.jsonSchema.properties?.owner, { anyOf: [{ $ref: '#/definitions/Tag' }, { type: 'null' }] })
  t.same(Object.keys(Task.jsonSchema.definitions as object), ['Tag'])
  t.same(Task.jsonSchema.properties?.due, { type: ['string', 'null'], format: 'date-time' })
})

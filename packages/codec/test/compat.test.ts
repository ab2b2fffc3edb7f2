// Issue 45 part 1: the schema evolution rule checked by a machine — `checkCompatibility` and
// `trivium-codegen check`. Named cases with the exact lines, the CLI's exit codes and forms, and a property
// test: random schemas with random compatible evolutions (accepted, and bytes written by either version
// decode on the other with the documented nulls and skips, through code the generator wrote) and random
// breaking edits (each one named).
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { checkCompatibility, generate } from '@trivium/codec'
import fc from 'fast-check'
import t from 'tap'

const CLI = fileURLToPath(new URL('../dist/cli.js', import.meta.url))
const RUNTIME = import.meta.resolve('@trivium/codec/runtime')

type Fields = Record<string, string>
type EndpointSpec = {
  request: string
  response: string
  streaming?: boolean
  http: { method: string; url: string }
}
interface Schema {
  models: { Item: Fields; Order: Fields; [name: string]: Fields }
  endpoints: { 'orders.create': EndpointSpec; 'orders.watch': EndpointSpec; [name: string]: EndpointSpec }
}
const ORDER_V1: Schema = {
  models: {
    Item: { sku: 'string', qty: 'int32' },
    Order: { id: 'int64', total: 'int32', items: '[@Item]', note: 'string?' },
  },
  endpoints: {
    'orders.create': { request: 'Order', response: 'Order', http: { method: 'POST', url: '/orders' } },
    'orders.watch': {
      request: 'Order',
      response: 'Order',
      streaming: true,
      http: { method: 'GET', url: '/orders/watch' },
    },
  },
}
const edit = (change: (s: Schema) => void): Schema => {
  const copy = structuredClone(ORDER_V1)
  change(copy)
  return copy
}
const lines = (old: object, next: object, level?: 'wire' | 'wire+json') =>
  checkCompatibility(old, next, level ? { level } : {})
    .changes.filter((c) => c.breaking)
    .map((c) => c.message)

t.test('the rule: each break named in one line', async (t) => {
  t.same(
    lines(
      ORDER_V1,
      edit(
        (s) =>
          (s.models.Order = {
            id: 'int64',
            note2: 'string?',
            total: 'int32',
            items: '[@Item]',
            note: 'string?',
          }),
      ),
    ),
    ['Order.note2: inserted before existing field total (append new fields at the end)'],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => (s.models.Order.total = 'int64')),
    ),
    ['Order.total: type changed int32 → int64'],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => (s.models.Order.note = 'string')),
    ),
    ['Order.note: nullable → required'],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => (s.models.Order.total = 'int32?')),
    ),
    ['Order.total: required → nullable (the binary form gains a null marker old readers do not expect)'],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => {
        delete (s.models as Record<string, unknown>).Item
        s.models.Order.items = '[string]'
      }),
    ),
    [
      'Item: model removed while Order.items still refers to it',
      'Order.items: type changed [@Item] → [string]',
    ],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => delete (s.models.Order as Record<string, string>).note),
    ),
    ['Order.note: field removed (fields are never removed)'],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => (s.models.Order = { id: 'int64', items: '[@Item]', total: 'int32', note: 'string?' })),
    ),
    [
      'Order.total: moved from position 2 to 3 (fields are never reordered)',
      'Order.items: moved from position 3 to 2 (fields are never reordered)',
    ],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => (s.models.Order.extra = 'string')),
    ),
    [
      'Order.extra: new field is required: string (new fields must be nullable: old writers do not send them)',
    ],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => delete (s.endpoints as Record<string, unknown>)['orders.create']),
    ),
    ['endpoint orders.create: endpoint removed (deployed clients still call it)'],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => (s.endpoints['orders.create'].response = 'Item')),
    ),
    ['endpoint orders.create: response model changed Order → Item'],
  )
  t.same(
    lines(
      ORDER_V1,
      edit((s) => (s.endpoints['orders.watch'].streaming = false)),
    ),
    ['endpoint orders.watch: server stream made unary'],
  )
})

t.test('compatible: nullable fields appended, new models and endpoints', async (t) => {
  const next = edit((s) => {
    s.models.Order.coupon = 'string?'
    s.models.Order.meta = 'any' // `any` holds null: an old writer's missing bytes read as null
    s.models.Item.gift = 'bool?'
    s.models.Refund = { id: 'int64' }
    ;(s.endpoints as Record<string, unknown>)['orders.refund'] = {
      request: 'Refund',
      response: 'Order',
      http: { method: 'POST', url: '/refunds' },
    }
  })
  const report = checkCompatibility(ORDER_V1, next)
  t.same(report, { level: 'wire+json', compatible: true, changes: [] })
})

t.test('a rename: compatible on binary (positional), breaking on JSON', async (t) => {
  const renamed = edit(
    (s) => (s.models.Order = { id: 'int64', sum: 'int32', items: '[@Item]', note: 'string?' }),
  )
  const json = checkCompatibility(ORDER_V1, renamed)
  t.equal(json.compatible, false)
  t.same(
    json.changes.map((c) => [c.rule, c.breaking, c.message]),
    [
      [
        'field-renamed',
        true,
        'Order.sum: renamed from total (binary reads it by position, JSON readers by name)',
      ],
    ],
  )
  const wire = checkCompatibility(ORDER_V1, renamed, { level: 'wire' })
  t.equal(wire.compatible, true)
  t.same(
    wire.changes.map((c) => c.breaking),
    [false],
    'reported, not breaking',
  )
  t.throws(() => checkCompatibility(ORDER_V1, renamed, { level: 'binary' as never }), {
    message: 'level must be wire or wire+json, got binary',
  })
})

t.test(
  'the CLI: lines and exit 1, "compatible" and exit 0, --json, --level, git refs, bad input',
  async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'trivium-compat-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const file = (name: string, schema: object) => {
      const path = join(dir, name)
      writeFileSync(path, JSON.stringify(schema))
      return path
    }
    const old = file('old.json', ORDER_V1)
    const run = (...args: string[]) =>
      spawnSync(process.execPath, [CLI, 'check', ...args], { encoding: 'utf8' })
    const broken = run(
      file(
        'bad.json',
        edit((s) => (s.models.Order.total = 'int64')),
      ),
      '--against',
      old,
    )
    t.equal(broken.status, 1)
    t.equal(broken.stdout, 'Order.total: type changed int32 → int64\n')
    const fine = run(
      file(
        'good.json',
        edit((s) => (s.models.Order.coupon = 'string?')),
      ),
      '--against',
      old,
    )
    t.equal(fine.status, 0)
    t.equal(fine.stdout, 'compatible (wire+json)\n')
    const renamed = file(
      'renamed.json',
      edit((s) => (s.models.Order = { id: 'int64', sum: 'int32', items: '[@Item]', note: 'string?' })),
    )
    const wire = run(renamed, '--against', old, '--level', 'wire')
    t.equal(wire.status, 0)
    t.equal(wire.stdout, 'compatible (wire)\n')
    t.equal(
      wire.stderr,
      'note: Order.sum: renamed from total (binary reads it by position, JSON readers by name)\n',
    )
    const json = run(renamed, '--against', old, '--json')
    t.equal(json.status, 1)
    t.match(JSON.parse(json.stdout), {
      level: 'wire+json',
      compatible: false,
      changes: [{ rule: 'field-renamed', subject: 'Order.sum' }],
    })
    // A git ref: the demo's schema as this commit has it, against itself.
    const demo = fileURLToPath(new URL('../../../apps/demo/schema/trivium.json', import.meta.url))
    const self = spawnSync(
      process.execPath,
      [CLI, 'check', demo, '--against', 'HEAD:apps/demo/schema/trivium.json'],
      {
        encoding: 'utf8',
        cwd: fileURLToPath(new URL('../../..', import.meta.url)),
      },
    )
    t.equal(self.status, 0, self.stderr)
    const missing = run(old, '--against', 'no-such-ref:schema.json')
    t.equal(missing.status, 2)
    t.match(
      missing.stderr,
      /^trivium-codegen check: --against no-such-ref:schema\.json: git show failed: fatal: /,
    )
    const noFile = run(old, '--against', 'nothing-here')
    t.equal(noFile.status, 2)
    t.equal(
      noFile.stderr,
      'trivium-codegen check: --against nothing-here: no such file (or give <git ref>:<path>, e.g. v1.2.0:schema/api.json)\n',
    )
    const invalid = run(file('invalid.json', { models: { A: { x: 'strin' } } }), '--against', old)
    t.equal(invalid.status, 2)
    t.equal(invalid.stderr, 'trivium-codegen check: model "A", field "x": unknown type "strin"\n')
    t.equal(run(old).status, 2, 'no --against: usage')
  },
)

// ---------- the property test ----------

const SCALARS = [
  'string',
  'int32',
  'int64',
  'bool',
  'float64',
  '[string]',
  'string?',
  'int32?',
  '[int32]?',
] as const
type Field = [name: string, type: string]
type Models = Record<string, Field[]>

/** 1–3 models M0… with 1–4 fields; a model may refer to a later one (no cycles). */
const schemaArb: fc.Arbitrary<Models> = fc
  .integer({ min: 1, max: 3 })
  .chain((count) =>
    fc
      .tuple(
        ...Array.from({ length: count }, (_, m) =>
          fc.array(
            fc.constantFrom(
              ...SCALARS,
              ...Array.from({ length: count - m - 1 }, (_, k) => `@M${m + k + 1}?`),
            ),
            { minLength: 1, maxLength: 4 },
          ),
        ),
      )
      .map((models) =>
        Object.fromEntries(
          models.map((types, m) => [`M${m}`, types.map((type, f): Field => [`f${f}`, type])]),
        ),
      ),
  )
const toSchema = (models: Models) => ({
  models: Object.fromEntries(
    Object.entries(models).map(([name, fields]) => [name, Object.fromEntries(fields)]),
  ),
})

/** A value of `type` (plain data, as the generated models take it). */
function valueArb(type: string, models: Models): fc.Arbitrary<unknown> {
  if (type.endsWith('?')) return fc.option(valueArb(type.slice(0, -1), models), { nil: null })
  if (type.startsWith('[')) return fc.array(valueArb(type.slice(1, -1), models), { maxLength: 3 })
  if (type.startsWith('@')) return modelValueArb(type.slice(1), models)
  switch (type) {
    case 'string':
      return fc.string({ maxLength: 8 })
    case 'int32':
      return fc.integer()
    case 'int64':
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
    case 'bool':
      return fc.boolean()
    default:
      return fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => (Object.is(x, -0) ? 0 : x))
  }
}
function modelValueArb(name: string, models: Models): fc.Arbitrary<Record<string, unknown>> {
  const fields = models[name] ?? []
  return fc.record(Object.fromEntries(fields.map(([field, type]) => [field, valueArb(type, models)])))
}

/** Compatible: up to two nullable fields appended to each model, maybe a new model. */
function evolve(models: Models, added: number[], types: string[], newModel: boolean): Models {
  const next: Models = {}
  for (const [i, [name, fields]] of Object.entries(models).entries()) {
    const extra = Array.from(
      { length: added[i] ?? 0 },
      (_, k): Field => [`n${k}`, `${types[(i + k) % types.length]}?`],
    )
    next[name] = [...fields, ...extra]
  }
  if (newModel) next.Extra = [['x', 'string']]
  return next
}

let moduleCount = 0
const dir = mkdtempSync(join(tmpdir(), 'trivium-evolution-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
type ModelClass = {
  encode(value: unknown): Uint8Array
  decode(bytes: Uint8Array): { toJSON(): Record<string, unknown> } & Record<string, unknown>
  fromJSON(json: unknown): { toJSON(): Record<string, unknown> }
}
/** The generator's code for `models`, written and imported. */
async function load(models: Models): Promise<Record<string, ModelClass>> {
  const out = join(dir, `v${++moduleCount}`)
  for (const file of generate(toSchema(models), { runtimeImport: RUNTIME })) {
    mkdirSync(join(out, file.path, '..'), { recursive: true })
    writeFileSync(join(out, file.path), file.contents)
  }
  return import(pathToFileURL(join(out, 'models.ts')).href)
}
const json = (value: unknown) => JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))

t.test('property: compatible evolutions are accepted and their bytes read both ways', async (t) => {
  const scalarTypes = fc.constantFrom('string', 'int32', 'bool', '[string]', 'int64')
  const cases = fc.sample(
    schemaArb.chain((models) =>
      fc.record({
        models: fc.constant(models),
        added: fc.array(fc.integer({ min: 0, max: 2 }), { minLength: 3, maxLength: 3 }),
        types: fc.array(scalarTypes, { minLength: 1, maxLength: 3 }),
        newModel: fc.boolean(),
      }),
    ),
    { numRuns: 12, seed: 4501 },
  )
  for (const { models, added, types, newModel } of cases) {
    const next = evolve(models, added, types, newModel)
    const report = checkCompatibility(toSchema(models), toSchema(next))
    t.same(report.changes, [], `accepted: ${json(next)}`)
    const [v1, v2] = [await load(models), await load(next)]
    const [old, now] = [v1.M0 as ModelClass, v2.M0 as ModelClass]
    for (const value of fc.sample(modelValueArb('M0', models), { numRuns: 5, seed: 45 })) {
      // old writer → new reader: the fields it did not know are null
      const read = now.decode(old.encode(value))
      for (const [field] of (next.M0 ?? []).slice((models.M0 ?? []).length)) t.equal(read[field], null)
      t.equal(json(old.fromJSON(read.toJSON()).toJSON()), json(old.decode(old.encode(value)).toJSON()))
    }
    for (const value of fc.sample(modelValueArb('M0', next), { numRuns: 5, seed: 46 })) {
      // new writer → old reader: what it does not know is skipped
      const read = old.decode(now.encode(value))
      t.equal(json(read.toJSON()), json(old.fromJSON(now.decode(now.encode(value)).toJSON()).toJSON()))
    }
  }
})

type Breaking = { rule: string; apply: (m: Models) => Models | undefined; subject: (m: Models) => string }
const BREAKS: Breaking[] = [
  {
    rule: 'field-inserted',
    apply: (m) => ({ ...m, M0: [['ins', 'string?'], ...(m.M0 ?? [])] }),
    subject: () => 'M0.ins',
  },
  {
    rule: 'field-removed',
    apply: (m) => ({ ...m, M0: (m.M0 ?? []).slice(0, -1) }),
    subject: (m) => `M0.${m.M0?.at(-1)?.[0]}`,
  },
  {
    rule: 'type-changed',
    apply: (m) => ({
      ...m,
      M0: (m.M0 ?? []).map(
        ([n, ty], i): Field => [n, i === 0 ? (ty.startsWith('bool') ? 'int32' : 'bool') : ty],
      ),
    }),
    subject: (m) => `M0.${m.M0?.[0]?.[0]}`,
  },
  {
    rule: 'nullable-to-required',
    apply: (m) => {
      const i = (m.M0 ?? []).findIndex(([, ty]) => ty.endsWith('?'))
      return i < 0
        ? undefined
        : { ...m, M0: (m.M0 ?? []).map(([n, ty], k): Field => [n, k === i ? ty.slice(0, -1) : ty]) }
    },
    subject: (m) => `M0.${m.M0?.find(([, ty]) => ty.endsWith('?'))?.[0]}`,
  },
  {
    rule: 'new-field-required',
    apply: (m) => ({ ...m, M0: [...(m.M0 ?? []), ['req', 'int32']] }),
    subject: () => 'M0.req',
  },
  {
    rule: 'model-removed',
    apply: (m) => {
      const last = `M${Object.keys(m).length - 1}`
      if (last === 'M0') return undefined
      // drop the model and every field that refers to it (the new schema must itself be valid)
      const rest = Object.fromEntries(Object.entries(m).filter(([name]) => name !== last))
      for (const name of Object.keys(rest))
        rest[name] = (rest[name] ?? []).filter(([, ty]) => !ty.includes(`@${last}`))
      return rest
    },
    subject: (m) => `M${Object.keys(m).length - 1}`,
  },
]

t.test('property: every breaking edit is named', async (t) => {
  const cases = fc.sample(fc.tuple(schemaArb, fc.constantFrom(...BREAKS)), { numRuns: 60, seed: 4502 })
  let checked = 0
  for (const [models, breaking] of cases) {
    const next = breaking.apply(models)
    if (next === undefined) continue
    const report = checkCompatibility(toSchema(models), toSchema(next))
    t.equal(report.compatible, false, `${breaking.rule} on ${json(models)}`)
    t.ok(
      report.changes.some(
        (c) => c.rule === breaking.rule && c.subject === breaking.subject(models) && c.breaking,
      ),
      `${breaking.rule} named for ${breaking.subject(models)}: ${report.changes.map((c) => c.message).join(' | ')}`,
    )
    checked++
  }
  t.ok(checked >= 40, `${checked} breaking edits checked`)
})

// Property fuzzing of the model decoders (bounded: a few seconds). Whatever the bytes or JSON, the
// binary reader (`decode`) returns or throws DecodeError; the server's decoders (core's jsonFormat over
// `fromJSON`, this package's binaryFormat) return or throw ValidationException — never another error.
// The long run (10 million inputs per decoder) is bench/codec/fuzz.mjs.
import { binaryFormat, DecodeError } from '@trivium/codec'
import { ValidationException } from '@trivium/core'
import { jsonFormat } from '@trivium/core/internal'
import fc from 'fast-check'
import t from 'tap'
// @ts-expect-error: a plain .mjs module shared with the long-run fuzzer
import { damage, SAMPLE_VALUES } from '../../../bench/codec/fuzz-inputs.mjs'
import { Containers, Optionals, Scalars, Task, Tree } from './generated/tasks/models.js'

const RUNS = 3000
const utf8 = new TextEncoder()

const byName = { Scalars, Optionals, Containers, Tree, Task } as const
const samples = (SAMPLE_VALUES as [keyof typeof byName, unknown][]).map(([name, value]) =>
  byName[name].encode(value as never),
)
const models = [Scalars, Optionals, Containers, Tree, Task] as const

/** A sample encoding with random damage. */
const damagedBinary = fc
  .tuple(
    fc.constantFrom(...samples),
    fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
    fc.option(fc.nat()),
    fc.uint8Array({ maxLength: 8 }),
  )
  .map(([bytes, edits, cut, tail]) => damage(bytes, edits, cut, tail))
const binaryInputs = fc.oneof(fc.uint8Array({ maxLength: 200 }), damagedBinary)

function only(allowed: new (...args: any[]) => Error, fn: () => unknown): boolean {
  try {
    fn()
  } catch (err) {
    if (!(err instanceof allowed)) throw err
  }
  return true
}

t.test('binary reader: random and damaged bytes decode or throw DecodeError', async (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...models), binaryInputs, (Model, bytes) =>
      only(DecodeError, () => Model.decode(bytes)),
    ),
    { numRuns: RUNS },
  )
  fc.assert(
    fc.property(fc.constantFrom(...models), binaryInputs, (Model, bytes) =>
      only(ValidationException, () => binaryFormat.decode(Model, bytes)),
    ),
    { numRuns: RUNS },
  )
  t.pass('no other error')
})

// JSON documents: any JSON value, the valid forms with values swapped, prototype keys, bad text.
const jsonValue = fc.jsonValue({ maxDepth: 4 })
const shaped = fc
  .tuple(
    fc.constantFrom(
      ...(SAMPLE_VALUES as [keyof typeof byName, unknown][]).map(([name, value]) =>
        byName[name].toJSON(value as never),
      ),
    ),
    fc.dictionary(
      fc.constantFrom(
        's',
        'i32',
        'i64',
        'dt',
        'raw',
        'dyn',
        'ints',
        'nested',
        'byId',
        'children',
        'label',
        'list',
        'ref',
        '__proto__',
        'constructor',
      ),
      jsonValue,
    ),
  )
  .map(([base, patch]) =>
    JSON.stringify({ ...(base as object), ...patch }).replace('"constructor"', '"__proto__"'),
  )
const jsonText = fc.oneof(
  jsonValue.map((v) => JSON.stringify(v)),
  shaped,
  fc.string({ maxLength: 80 }),
  fc.constantFrom('{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '', '{', '"\\ud800"'),
)
const jsonBytes = fc.oneof(
  jsonText.map((s) => utf8.encode(s)),
  fc.uint8Array({ maxLength: 80 }), // invalid UTF-8 among them
)

t.test('JSON decoders: any bytes give a model or a ValidationException', async (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...models), jsonBytes, (Model, bytes) =>
      only(ValidationException, () => jsonFormat.decode(Model, bytes)),
    ),
    { numRuns: RUNS },
  )
  fc.assert(
    fc.property(fc.constantFrom(...models), jsonValue, (Model, value) =>
      only(ValidationException, () => Model.fromJSON(value)),
    ),
    { numRuns: RUNS },
  )
  t.equal(Object.hasOwn(Object.prototype, 'x'), false, 'no prototype was polluted')
})

// Property tests: for random instances of generated models, decode(encode(x)) equals x and the JSON
// form round-trips (through JSON text) too.
import fc from 'fast-check'
import type { Test } from 'tap'
import t from 'tap'
import { Containers, Optionals, Scalars, Tag, Task, Tree } from './generated/tasks/models.js'

const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })
const int64 = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
const date = fc.integer({ min: -8.64e15, max: 8.64e15 }).map((ms) => new Date(ms))
const bytes = fc.uint8Array({ maxLength: 40 })
const str = fc.string({ unit: 'grapheme', maxLength: 30 })
const json = fc.jsonValue({ maxDepth: 3 }) as fc.Arbitrary<unknown>
const tag = fc.record({ name: str, color: fc.option(str) }).map((v) => new Tag(v))

const scalars = fc
  .record({
    s: fc
      .string({ unit: 'binary', maxLength: 60 })
      .filter((s) => !/[\ud800-\udfff]/.test(s) || s.isWellFormed()),
    i32: int32,
    i64: int64,
    f32: fc.float(),
    f64: fc.double(),
    b: fc.boolean(),
    dt: date,
    raw: bytes,
    dyn: json,
  })
  .map((v) => new Scalars(v))

const optionals = fc
  .record({
    s: fc.option(str),
    i32: fc.option(int32),
    i64: fc.option(int64),
    f64: fc.option(fc.double()),
    b: fc.option(fc.boolean()),
    dt: fc.option(date),
    raw: fc.option(bytes),
    ref: fc.option(tag),
    list: fc.option(fc.array(int32, { maxLength: 5 })),
  })
  .map((v) => new Optionals(v))

const containers = fc
  .record({
    ints: fc.array(int32, { maxLength: 10 }),
    nested: fc
      .array(fc.tuple(str, fc.array(fc.option(int32), { maxLength: 4 })), { maxLength: 4 })
      .map((e) => new Map(e)),
    byId: fc.array(fc.tuple(int64, tag), { maxLength: 4 }).map((e) => new Map(e)),
    byNum: fc.array(fc.tuple(int32, str), { maxLength: 4 }).map((e) => new Map(e)),
    matrix: fc.array(fc.array(fc.double(), { maxLength: 3 }), { maxLength: 3 }),
    tags: fc.array(tag, { maxLength: 3 }),
    maybeTags: fc.array(fc.option(tag), { maxLength: 3 }),
  })
  .map((v) => new Containers(v))

const task = fc
  .record({
    id: int64,
    title: str,
    done: fc.boolean(),
    tags: fc.array(str, { maxLength: 4 }),
    due: fc.option(date),
    owner: fc.option(tag),
  })
  .map((v) => new Task(v))

const treeOf: fc.Memo<Tree> = fc.memo((n) =>
  fc
    .record({ label: str, children: n <= 1 ? fc.constant([]) : fc.array(treeOf(n - 1), { maxLength: 3 }) })
    .map((v) => new Tree(v)),
)
const tree = treeOf(4)

interface M<T> {
  encode(v: T): Uint8Array
  decode(b: Uint8Array): T
  toJSON(v: T): unknown
  fromJSON(j: unknown): T
}

function roundTrips<T extends { equals(o: unknown): boolean; hashCode(): number }>(
  t: Test,
  name: string,
  model: M<NoInfer<T>>,
  arb: fc.Arbitrary<T>,
) {
  t.test(name, async (t) => {
    fc.assert(
      fc.property(arb, (x) => {
        const bin = model.decode(model.encode(x))
        const viaJson = model.fromJSON(JSON.parse(JSON.stringify(model.toJSON(x))))
        return (
          bin.equals(x) &&
          viaJson.equals(x) &&
          bin.hashCode() === x.hashCode() &&
          viaJson.hashCode() === x.hashCode()
        )
      }),
      { numRuns: 300 },
    )
    t.pass('decode(encode(x)) equals x, and the JSON form round-trips')
  })
}

roundTrips(t, 'Scalars', Scalars, scalars)
roundTrips(t, 'Optionals', Optionals, optionals)
roundTrips(t, 'Containers', Containers, containers)
roundTrips(t, 'Task', Task, task)
roundTrips(t, 'Tree (recursive)', Tree, tree)

// Inputs shared by the long-run fuzzer (fuzz.mjs) and the bounded property tests in the suite
// (packages/codec/test/fuzz.test.ts, packages/wire/test/fuzz.test.ts).

/** Valid values of the models of packages/codec/test/schemas/tasks.json: [model name, value]. */
export const SAMPLE_VALUES = [
  [
    'Scalars',
    {
      s: 'hé😀',
      i32: -5,
      i64: -(2n ** 40n),
      f32: 1.5,
      f64: Number.NaN,
      b: true,
      dt: new Date(12345),
      raw: new Uint8Array([1, 2, 3]),
      dyn: { a: [1, 'x', null, { b: 2.5 }] },
    },
  ],
  [
    'Optionals',
    {
      s: 'x',
      i32: 1,
      i64: 2n,
      f64: 3,
      b: false,
      dt: new Date(0),
      raw: new Uint8Array(2),
      ref: { name: 'r', color: 'c' },
      list: [1, 2, 3],
    },
  ],
  ['Optionals', {}],
  [
    'Containers',
    {
      ints: [1, 2, 3],
      nested: new Map([
        ['a', [1, null, 3]],
        ['b', []],
      ]),
      byId: new Map([[5n, { name: 't' }]]),
      byNum: new Map([
        [1, 'one'],
        [-2, 'minus two'],
      ]),
      matrix: [[1.5, 2], [], [3]],
      tags: [{ name: 'x', color: 'y' }],
      maybeTags: [null, { name: 'z' }],
    },
  ],
  [
    'Tree',
    {
      label: 'root',
      children: [
        { label: 'a', children: [{ label: 'b', children: [] }] },
        { label: 'c', children: [] },
      ],
    },
  ],
  ['Task', { id: 1n, title: 'task', done: true, tags: ['a', 'b'], due: new Date(5), owner: { name: 'o' } }],
]

/**
 * Valid bytes with damage: `edits` ([index, byte], index modulo the length) overwrite bytes, `cut`
 * (modulo length + 1) truncates, `tail` is appended.
 */
export function damage(bytes, edits, cut, tail) {
  let out = Uint8Array.from(bytes)
  for (const [at, value] of edits) if (out.length > 0) out[at % out.length] = value
  if (cut !== null && cut !== undefined) out = out.subarray(0, cut % (out.length + 1))
  const joined = new Uint8Array(out.length + tail.length)
  joined.set(out)
  joined.set(tail, out.length)
  return joined
}

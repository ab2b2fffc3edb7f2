// atExpiry (token-expiry.ts): every pending expiry shares one timer (issue 42, bench/density). Each is
// still called once, never before its time, in time order (those more than a 100 ms slot apart); a
// cancelled one is never called, and cancelling the earliest leaves the others on time.
import { atExpiry } from '@trivium/core/internal'
import t from 'tap'

function until(check: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms
  return new Promise((resolve, reject) => {
    const poll = (): void => {
      if (check()) resolve()
      else if (Date.now() > end) reject(new Error(`not within ${ms} ms`))
      else setTimeout(poll, 5)
    }
    poll()
  })
}

t.test('expiries are called once each, never early, in order; a cancelled one never', async (t) => {
  const start = Date.now()
  const calls: { name: string; at: number; due: number }[] = []
  const schedule = (name: string, after: number) => {
    const due = start + after
    return atExpiry(due, () => calls.push({ name, at: Date.now(), due }))
  }
  const cancelFirst = schedule('first, cancelled', 150)
  schedule('b', 600)
  schedule('c', 600) // the same slot as b
  const cancelD = schedule('d, cancelled', 750)
  schedule('e', 900)
  schedule('a', 300)
  cancelFirst()
  cancelD()
  await until(() => calls.length >= 4, 10_000)
  await new Promise((r) => setTimeout(r, 100)) // anything still wrongly pending would come now
  t.same(
    calls.map((c) => c.name),
    ['a', 'b', 'c', 'e'],
  )
  t.same(
    calls.filter((c) => c.at < c.due).map((c) => c.name),
    [],
    'none before its time',
  )
})

t.test('an expiry already past is called at once (on the next timer turn)', async (t) => {
  let called = 0
  atExpiry(Date.now() - 1000, () => called++)
  await until(() => called === 1, 10_000)
  t.equal(called, 1)
})

// `pnpm bench` on a machine without wrk (issue 33): one line saying how to get it, exit 1, no stack trace,
// before any suite has run; the same when one suite is run on its own.
import { spawnSync } from 'node:child_process'
import t from 'tap'

const LINE =
  'bench: wrk (the HTTP load generator) is missing at /nonexistent/wrk: install it with `apt-get install wrk` (or set BENCH_WRK to its path)\n'

for (const args of [['bench/run.mjs'], ['bench/side-by-side/run.mjs']]) {
  t.test(`node ${args.join(' ')} without wrk`, async (t) => {
    const r = spawnSync(process.execPath, args, {
      encoding: 'utf8',
      env: { ...process.env, BENCH_WRK: '/nonexistent/wrk' },
    })
    t.equal(r.status, 1)
    t.equal(r.stderr, LINE)
    t.equal(r.stdout, '', 'no suite started')
  })
}

t.test('suites that need no wrk still run without it', async (t) => {
  const r = spawnSync(process.execPath, ['bench/run.mjs', 'nosuchsuite'], {
    encoding: 'utf8',
    env: { ...process.env, BENCH_WRK: '/nonexistent/wrk' },
  })
  t.equal(r.status, 0)
  t.equal(r.stderr, '')
})

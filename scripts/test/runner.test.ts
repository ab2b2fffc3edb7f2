// The test runner (scripts/test.mjs, issue 31): every file gets a result line under its own path, a failure is
// named with the subtests it sits in, and a file that timed out, crashed or ended early is named and counted as
// failed — never reported under another file's name, never silently missing.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import t from 'tap'

const root = join(import.meta.dirname, '..', '..')
const fixtures = 'scripts/test/fixtures/runner'

t.test('each file is named with its result; failures and files without a result are listed', async (t) => {
  const files = ['passes', 'fails', 'exits', 'killed', 'hangs'].map((f) => `${fixtures}/${f}.ts`)
  const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
    execFile(
      process.execPath,
      ['scripts/test.mjs', ...files],
      {
        cwd: root,
        // (hangs.ts sets its own 2 s limit; the runner's stays 900 s.) No browser install from a test, and no
        // coverage run of its own: it would start by clearing coverage/, where the enclosing CI run collects.
        env: { ...process.env, TRIVIUM_SKIP_BROWSER: '1', CI: 'false', TRIVIUM_COVERAGE: '0' },
        maxBuffer: 16 * 1024 * 1024,
      },
      (err, stdout) => resolve({ code: err ? (err.code as number) : 0, stdout }),
    )
  })
  t.equal(code, 1, 'the run fails')
  const results = stdout
    .split('\n')
    .filter((line) => /^(not )?ok \d+ - /.test(line))
    .map((line) => line.replace(/^((?:not )?ok) \d+ - (\S+) # time=\d+ms$/, '$1 $2'))
    .sort()
  t.same(results, [
    `not ok ${fixtures}/exits.ts`,
    `not ok ${fixtures}/fails.ts`,
    `not ok ${fixtures}/hangs.ts`,
    `not ok ${fixtures}/killed.ts`,
    `ok ${fixtures}/passes.ts`,
  ])
  const failed = stdout.slice(stdout.indexOf('\nfailed:\n') + 9).split('\n')
  t.same(failed.slice(0, -2).sort(), [
    `  ${fixtures}/exits.ts: exited with 3 after its tests passed`,
    `  ${fixtures}/fails.ts > at the top`,
    `  ${fixtures}/fails.ts > outer > inner > one is two`,
    `  ${fixtures}/hangs.ts > waits forever > timeout!`,
    `  ${fixtures}/killed.ts: no result (exited with SIGKILL)`,
  ])
  // Each file's own counts (tap's last line: passes 2, fails 1 + 2 failed, exits 1); a file without them, or
  // that exits non-zero after they said all passed, counts one failure.
  t.equal(failed.at(-2), '4 passed, 5 failed')
})

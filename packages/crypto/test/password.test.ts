import { readdirSync, readFileSync } from 'node:fs'
import {
  BCRYPT_COST,
  configurePasswordWorkers,
  DEFAULT_MAX_QUEUE,
  DEFAULT_WORKER_NICE,
  defaultPoolSize,
  hashPassword,
  PASSWORD_TOO_LONG_MESSAGE,
  passwordWorkerCount,
  shutdownPasswordWorkers,
  verifyPassword,
} from '@trivium/crypto'
import { ValidationException } from '@trivium/wire'
import bcrypt from 'bcryptjs'
import t from 'tap'

/** Nice value of each thread of this process (Linux /proc), by thread id. */
function threadNices(): Map<number, number> {
  const nices = new Map<number, number>()
  for (const tid of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
    // Fields after the parenthesised command name start at field 3 (state); nice is field 19.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    nices.set(Number(tid), Number(fields[16]))
  }
  return nices
}

t.teardown(() => shutdownPasswordWorkers())

t.test('hash: bcrypt cost 12, verify true for the right password, false otherwise', async (t) => {
  t.equal(BCRYPT_COST, 12)
  const hash = await hashPassword('Correct-horse1!')
  t.match(hash, /^\$2b\$12\$[./A-Za-z0-9]{53}$/)
  t.equal(bcrypt.getRounds(hash), 12)
  t.equal(await verifyPassword('Correct-horse1!', hash), true)
  t.equal(await verifyPassword('correct-horse1!', hash), false)
  t.equal(await verifyPassword('', hash), false)
  t.ok(passwordWorkerCount() >= 1, 'ran in a worker thread')
})

t.test('interop: hashes made by bcryptjs on the main thread, incl. $2y$', async (t) => {
  const hash = bcrypt.hashSync('pässwörd', 4)
  t.equal(await verifyPassword('pässwörd', hash), true)
  t.equal(await verifyPassword('pässwörd', hash.replace(/^\$2b\$/, '$2y$')), true)
  t.equal(await verifyPassword('passwörd', hash), false)
})

t.test('garbage hash: false, never a throw', async (t) => {
  for (const bad of [
    '',
    'garbage',
    '$2b$12$',
    `$2b$12$${'!'.repeat(53)}`,
    `$2b$99$${'a'.repeat(53)}`,
    `$2b$03$${'a'.repeat(53)}`,
    '$1$abc$def',
    'x'.repeat(100_000),
  ]) {
    t.equal(await verifyPassword('password', bad), false, bad.slice(0, 12))
  }
  t.equal(await verifyPassword('password', undefined as unknown as string), false)
  t.equal(await verifyPassword(undefined as unknown as string, `$2b$04$${'a'.repeat(53)}`), false)
  // Well-formed shape but not a real hash: the worker's compare fails or mismatches → false.
  t.equal(await verifyPassword('password', `$2b$04$${'.'.repeat(53)}`), false)
})

t.test('72-byte rule: over 72 UTF-8 bytes is a ValidationException, never silently truncated', async (t) => {
  t.equal(PASSWORD_TOO_LONG_MESSAGE, 'Password must be at most 72 bytes')
  const exactly72 = 'a'.repeat(72)
  const hash = await hashPassword(exactly72)
  t.equal(await verifyPassword(exactly72, hash), true)
  await t.rejects(hashPassword('a'.repeat(73)), {
    name: 'ValidationException',
    code: 'TRV_VALIDATION',
    statusCode: 400,
    message: 'Password must be at most 72 bytes',
    details: [{ field: 'password', message: 'Password must be at most 72 bytes' }],
  })
  // Counted in bytes, not characters: 25 × "€" (3 bytes) = 75 bytes.
  await t.rejects(hashPassword('€'.repeat(25)), ValidationException)
  t.equal(
    await verifyPassword(`${exactly72}b`, hash),
    false,
    'a longer password that shares the prefix does not match',
  )
  await t.rejects(hashPassword(12345 as unknown as string), { message: 'Password must be a string' })
})

t.test('concurrent hashes run in the pool; shutdown then restart', async (t) => {
  const passwords = Array.from({ length: 4 }, (_, i) => `pw-${i}`)
  const hashes = await Promise.all(passwords.map((p) => hashPassword(p)))
  t.equal(new Set(hashes).size, 4)
  await shutdownPasswordWorkers()
  t.equal(passwordWorkerCount(), 0)
  t.equal(await verifyPassword('pw-3', hashes[3]!), true, 'pool restarts lazily')
})

t.test('a full queue refuses new jobs with ServiceUnavailableException (503)', async (t) => {
  await shutdownPasswordWorkers()
  configurePasswordWorkers({ poolSize: 1, maxQueue: 1 })
  t.teardown(() => configurePasswordWorkers({ poolSize: defaultPoolSize(), maxQueue: DEFAULT_MAX_QUEUE }))
  const running = hashPassword('one')
  const queued = hashPassword('two')
  await t.rejects(hashPassword('three'), {
    name: 'ServiceUnavailableException',
    code: 'TRV_SERVICE_UNAVAILABLE',
    statusCode: 503,
    message: 'Password service is busy, try again later',
  })
  t.match(await running, /^\$2b\$12\$/)
  t.match(await queued, /^\$2b\$12\$/)
  t.throws(() => configurePasswordWorkers({ poolSize: 0 }), { code: 'TRV_CRYPTO_INVALID_ARGUMENT' })
  t.throws(() => configurePasswordWorkers({ maxQueue: -1 }), { code: 'TRV_CRYPTO_INVALID_ARGUMENT' })
})

t.test('a worker idle for workerIdleMs is stopped, and the next job starts one again', async (t) => {
  await shutdownPasswordWorkers()
  configurePasswordWorkers({ workerIdleMs: 50 })
  t.teardown(() => configurePasswordWorkers({ workerIdleMs: 15_000 }))
  const hash = await hashPassword('idle-1')
  while (passwordWorkerCount() !== 0) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(passwordWorkerCount(), 0, 'the idle worker was stopped')
  t.equal(await verifyPassword('idle-1', hash), true, 'a new worker answers')
  t.throws(() => configurePasswordWorkers({ workerIdleMs: 0 }), {
    code: 'TRV_CRYPTO_INVALID_ARGUMENT',
    message: '@trivium/crypto: workerIdleMs must be an integer from 1 to 2147483647',
  })
})

const linux = process.platform === 'linux'
const base = linux ? (threadNices().get(process.pid) ?? 0) : 0
const prioritySkip = !linux
  ? 'thread priorities are only set on Linux'
  : base > 19 - DEFAULT_WORKER_NICE
    ? `the process already runs at nice ${base}`
    : false

t.test(
  'workers run at a lower OS priority than the event loop (Linux)',
  { skip: prioritySkip },
  async (t) => {
    t.equal(DEFAULT_WORKER_NICE, 10)
    await shutdownPasswordWorkers()
    t.teardown(() =>
      configurePasswordWorkers({ poolSize: defaultPoolSize(), workerNice: DEFAULT_WORKER_NICE }),
    )
    configurePasswordWorkers({ poolSize: 2 })
    await Promise.all([hashPassword('one'), hashPassword('two')])
    t.equal(passwordWorkerCount(), 2)
    const niced = () => [...threadNices().values()].filter((n) => n === base + DEFAULT_WORKER_NICE).length
    t.equal(niced(), 2, 'both workers at nice +10')
    t.equal(threadNices().get(process.pid), base, 'the main thread is left as it was')

    await shutdownPasswordWorkers()
    configurePasswordWorkers({ poolSize: 1, workerNice: 3 })
    await hashPassword('three')
    t.equal([...threadNices().values()].filter((n) => n === base + 3).length, 1, 'one worker at nice +3')
    t.equal(niced(), 0)

    await shutdownPasswordWorkers()
    configurePasswordWorkers({ workerNice: 0 })
    await hashPassword('four')
    t.same(
      [...threadNices().values()].filter((n) => n !== base),
      [],
      'workerNice 0 leaves every thread at the process priority',
    )
    await shutdownPasswordWorkers()

    for (const bad of [-1, 20, 1.5]) {
      t.throws(() => configurePasswordWorkers({ workerNice: bad }), {
        code: 'TRV_CRYPTO_INVALID_ARGUMENT',
        message: '@trivium/crypto: workerNice must be an integer from 0 to 19',
      })
    }
  },
)

t.test('shutdown rejects a job in flight', async (t) => {
  const pending = t.rejects(hashPassword('in-flight'), {
    name: 'PasswordWorkerError',
    code: 'TRV_CRYPTO_WORKER',
    message: 'Password workers were shut down',
  })
  await shutdownPasswordWorkers()
  await pending
})

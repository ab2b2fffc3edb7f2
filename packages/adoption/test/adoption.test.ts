// Adopting Trivium as a user would (issue 14): every publishable package packed with pnpm (as
// `pnpm -r publish` would), the tarballs installed with npm into a scratch app outside the workspace
// together with fastify 5, a strict consumer type-checked against them (skipLibCheck off) and run.
// Needs the packages built (`pnpm test` builds first): packing here skips `prepack` to stay fast;
// test/package-metadata.test.ts covers `prepack`. npm uses its cache first (`--prefer-offline`).
import { execFile, spawn } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative, resolve } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { packAll, publishablePackages, root } from '../../../scripts/pack.mjs'
import { typeChecker } from '../../../scripts/test/type-check.ts'
import { assertHostUnchanged, compileHostDiff, officialPlugins } from './host-diff.ts'

const run = promisify(execFile)
const consumer = resolve(import.meta.dirname, '..', 'consumer')
// tap preloads its hooks through NODE_OPTIONS; the scratch app's processes are a user's, without them. Nor
// NODE_V8_COVERAGE (a coverage run's): npm, tsc and the installed copies outside the workspace count for no
// package's coverage, and V8's block counters made each tsc here ~25 % dearer.
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(NODE_OPTIONS|NODE_V8_COVERAGE|TAP|_TAPJS)/.test(k)),
)

// Every type-check here (five projects, each as `tsc -p` would) runs in one child process, in the order asked:
// TypeScript is loaded once and a file two projects read alike (lib, @types/node, fastify's and Trivium's .d.ts)
// is parsed once; each project is still checked in full under its own options (scripts/test/type-check.ts).
const checker = typeChecker(env)
t.teardown(() => checker.close())

const work = mkdtempSync(join(tmpdir(), 'trivium-adoption-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))
t.ok(!work.startsWith(root), 'the scratch app is outside the workspace')

const app = join(work, 'app')
// Every entry point of every package, so each published .d.ts is checked (skipLibCheck is off).
const entries = publishablePackages().flatMap((p) => {
  const pkg = JSON.parse(readFileSync(join(p.dir, 'package.json'), 'utf8'))
  return Object.keys(pkg.exports)
    .filter((k) => k !== './package.json')
    .map((k) => p.name + k.slice(1))
})
let tarballs = new Map<string, string>()
// The consumer starts as soon as it is compiled and runs while the next type-check does (it never loads ioredis).
let consumerRun: Promise<Report> | undefined
let hostDiffCompiled: Promise<string> | undefined

t.before(async () => {
  for (const p of publishablePackages()) {
    if (!existsSync(join(p.dir, 'dist', 'index.js')))
      throw new Error(`${p.name} is not built: run \`npx pnpm build\` first`)
  }
  tarballs = packAll(join(work, 'tarballs'), { ignoreScripts: true })
  cpSync(consumer, app, { recursive: true })
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }),
  )
  writeFileSync(
    join(app, 'entries.ts'),
    entries.map((e, i) => `export type * as e${i} from '${e}'\n`).join(''),
  )
  await npmInstall(app, [...tarballs.values(), 'fastify@^5', '@types/node@^20.19', ...officialPlugins])
  // Its own program (it types `request.user` through @fastify/jwt), compiled while the other checks run.
  hostDiffCompiled = compileHostDiff(app, checker)
  hostDiffCompiled.catch(() => {}) // awaited by the test that asserts it
})

t.test('each installed package ships LICENSE, README, CHANGELOG and no dangling source map', async (t) => {
  for (const name of tarballs.keys()) {
    const dir = join(app, 'node_modules', name)
    for (const f of ['LICENSE', 'README.md', 'CHANGELOG.md', 'dist/index.js'])
      t.ok(existsSync(join(dir, f)), `${name}/${f}`)
    const dangling: string[] = []
    for (const file of walk(join(dir, 'dist'))) {
      if (file.endsWith('.map')) {
        const map = JSON.parse(readFileSync(file, 'utf8')) as { sources: string[] }
        for (const s of map.sources)
          if (!existsSync(resolve(dirname(file), s))) dangling.push(`${rel(file)} → ${s}`)
        continue
      }
      const url = /\/\/# sourceMappingURL=(\S+)\s*$/.exec(readFileSync(file, 'utf8'))?.[1]
      if (url !== undefined && !existsSync(resolve(dirname(file), url)))
        dangling.push(`${rel(file)} → ${url}`)
    }
    t.same(dangling, [], `${name}: every sourceMappingURL and every map source is in the package`)
  }
})

t.test('a strict consumer type-checks against the published types (skipLibCheck off)', async (t) => {
  const config = JSON.parse(readFileSync(join(app, 'tsconfig.json'), 'utf8'))
  t.match(
    config.compilerOptions,
    {
      strict: true,
      module: 'nodenext',
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      skipLibCheck: false,
    },
    'the strictest consumer settings',
  )
  const result = (await checker.check(app, app)).stdout
  t.equal(
    result,
    '',
    `tsc reports nothing for app.ts, types/trivium-user.ts (request.user opted in) and ${entries.length} entry points`,
  )
  consumerRun = runApp(join(app, 'dist', 'app.js'))
  consumerRun.catch(() => {}) // awaited by the test that asserts it
})

t.test(
  'without the optional ioredis, every package that does not depend on it still type-checks',
  async (t) => {
    // ioredis is only for the Redis stores (an optional peer of @trivium/auth; "only for the Redis store" in
    // @trivium/protections' README), so a consumer may not have it. It is installed here because
    // @trivium/redis-bus requires it (a peer): set it aside while checking the other packages' types.
    const installed = join(app, 'node_modules', 'ioredis')
    const aside = join(work, 'ioredis-aside')
    renameSync(installed, aside)
    t.teardown(() => renameSync(aside, installed))
    const checked = publishablePackages().filter((p) => !requires(p.dir, 'ioredis'))
    const entriesOf = (name: string) => entries.filter((e) => e === name || e.startsWith(`${name}/`))
    const lines = checked
      .flatMap((p) => entriesOf(p.name))
      .map((e, i) => `export type * as e${i} from '${e}'\n`)
    writeFileSync(join(app, 'entries-no-ioredis.ts'), lines.join(''))
    writeFileSync(
      join(app, 'tsconfig.no-ioredis.json'),
      JSON.stringify({
        extends: './tsconfig.json',
        compilerOptions: { noEmit: true },
        // Issue 33 item 1: a service that declares `request.user` itself, beside @trivium/auth.
        include: ['entries-no-ioredis.ts', 'types/own-user.ts'],
      }),
    )
    const output = (await checker.check(app, 'tsconfig.no-ioredis.json')).stdout
    const errors = output.split('\n').filter((l) => / error TS\d+/.test(l))
    for (const p of checked) {
      // Issue 14 item 6: no optional peer (ioredis) in any emitted .d.ts without a fallback.
      t.same(
        errors.filter((l) => l.startsWith(`node_modules/${p.name}/`)),
        [],
        `${p.name} type-checks without ioredis`,
      )
    }
    t.same(
      errors.filter((l) => l.startsWith('types/own-user.ts')),
      [],
      'a service that declares FastifyRequest.user itself compiles beside @trivium/auth (no TS2717)',
    )
    t.same(
      errors.filter((l) => !checked.some((p) => l.startsWith(`node_modules/${p.name}/`))),
      [],
      'no other error',
    )
  },
)

// Issue 33 item 5: older resolutions ignore `exports`; typesVersions maps every subpath to its types.
t.test('under moduleResolution node10 every entry point type-checks', async (t) => {
  const output = await typeCheck('tsconfig.node10.json', {
    compilerOptions: {
      target: 'ES2022',
      lib: ['ES2023'],
      module: 'commonjs',
      moduleResolution: 'node10',
      strict: true,
      // fastify's own types (pino) need it under CommonJS, Trivium's do not
      esModuleInterop: true,
      skipLibCheck: false,
      types: ['node'],
      noEmit: true,
    },
    include: ['entries.ts'],
  })
  t.equal(output, '', `tsc reports nothing for ${entries.length} entry points`)
})

t.test(
  'the consumer runs: plain route, prefixed endpoint, HTTP, WebSocket and TCP calls, close',
  async (t) => {
    if (!consumerRun) throw new Error('the consumer did not compile')
    const report = await consumerRun
    t.same(
      report.legacy,
      { status: 200, body: { legacy: true } },
      'the existing plain Fastify route still answers',
    )
    t.same(
      report.calls,
      {
        http: { value: { message: 'hello http', via: 'http' } },
        websocket: { value: { message: 'hello websocket', via: 'websocket' } },
        tcp: { value: { message: 'hello tcp', via: 'tcp' } },
        prefixedOverWebSocket: { value: { message: 'hello from v1', via: 'websocket' } },
      },
      'one endpoint, three transports, through @trivium/client; names stay global on WebSocket',
    )
    // Issue 14 item 2: an endpoint registered inside `app.register(child, { prefix: '/v1' })` gets the
    // prefix and the child's hooks (core's README "Encapsulation").
    t.test('the child context prefix and hooks apply to its endpoint', async (t) => {
      t.same(
        report.prefixed,
        { status: 200, version: '1', body: { message: 'hello from v1', via: 'http' } },
        'GET /v1/hello with the child onRequest hook',
      )
      t.same(report.unprefixed, { status: 404 }, 'not served at GET /hello')
    })
    // With default options the frame transports drain in parallel, within a grace (3 s) well under
    // Fastify's pluginTimeout (issue 14 item 1).
    t.test('app.close() with calls in flight resolves well inside pluginTimeout', async (t) => {
      const s = report.shutdown
      t.equal(s.pluginTimeout, 10_000, "Fastify's default pluginTimeout")
      t.same(s.closed, { value: 'closed' }, 'app.close() resolves')
      t.ok(s.closeMs < s.pluginTimeout / 2, `closed in ${s.closeMs} ms`)
      t.same(
        [s.calls.slowHttp, s.calls.slowWebSocket, s.calls.slowTcp],
        [
          { value: { message: 'slept for http', via: 'http' } },
          { value: { message: 'slept for websocket', via: 'websocket' } },
          { value: { message: 'slept for tcp', via: 'tcp' } },
        ],
        'unary calls in flight finish during the grace',
      )
      t.match(
        s.calls.hangWebSocket,
        { error: { statusCode: 503 } },
        'a call still running at the end of the grace fails with 503',
      )
      t.match(s.calls.hangTcp, { error: { statusCode: 503 } }, 'the same over TCP')
      t.same(
        report.keptAlive,
        [],
        'nothing keeps the process alive after close (no timer, socket or server left)',
      )
      t.equal(report.exitedByItself, true, 'the process exits by itself after its report')
    })
  },
)

// Issue 40 "Done when": the same service with and without Trivium, in both registration orders (test/host-diff.ts).
t.test('an existing service with every official plugin answers the same beside Trivium', async (t) => {
  t.equal(await hostDiffCompiled, '', 'consumer/host-diff.ts: strict, skipLibCheck off, no error')
  await assertHostUnchanged(t, app, env)
})

// Issue 40 item 10: the crypto helpers need no Fastify. Installed alone (with @trivium/wire, as the registry would
// supply it), npm brings no Fastify (an optional peer); `@trivium/crypto/helpers` type-checks under strict with
// skipLibCheck off and runs, and the main entry's JavaScript loads too (its types name Fastify, for the plugin).
t.test('a crypto-only service installs no Fastify and uses @trivium/crypto/helpers', async (t) => {
  const dir = join(work, 'crypto-only')
  cpSync(join(consumer, 'tsconfig.json'), join(dir, 'tsconfig.json'))
  writeFileSync(
    join(dir, 'package.json'),
    JSON.stringify({ name: 'crypto-only', private: true, type: 'module' }),
  )
  const wanted = ['@trivium/crypto', '@trivium/wire'].map((name) => {
    const tarball = tarballs.get(name)
    if (tarball === undefined) throw new Error(`${name} was not packed`)
    return tarball
  })
  await npmInstall(dir, [...wanted, '@types/node@^20.19'])
  t.notOk(existsSync(join(dir, 'node_modules', 'fastify')), 'npm installed no fastify')
  writeFileSync(
    join(dir, 'app.ts'),
    `import { createCrypto, generateSecureToken, Signer, totp } from '@trivium/crypto/helpers'
const crypto = createCrypto({ encryptionKey: Buffer.alloc(32, 7).toString('base64'), hashSalt: 'salt' })
const secret = totp.generateSecret()
console.log(JSON.stringify({
  roundTrip: crypto.encryptor.decrypt(crypto.encryptor.encrypt('hello')),
  signed: new Signer('salt').verify('m', crypto.signer.sign('m')),
  token: generateSecureToken(16).length,
  totp: totp.verify(totp.generate(secret), secret),
}))
`,
  )
  const compiled = (await checker.check(dir, '.')).stdout
  t.equal(compiled, '', 'strict, skipLibCheck off: no error')
  const { stdout } = await run(process.execPath, [join(dir, 'dist', 'app.js')], { cwd: dir, env })
  t.same(JSON.parse(stdout), { roundTrip: 'hello', signed: true, token: 22, totp: true })
  // The main entry's JavaScript loads without Fastify too (its types name Fastify, for the plugin).
  const main = await run(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      "const m = await import('@trivium/crypto'); console.log(typeof m.default, typeof m.totp)",
    ],
    { cwd: dir, env },
  )
  t.equal(main.stdout, 'function object\n')
})

/** `npm install` of these tarballs and packages into the app at `dir` (npm's cache first). */
function npmInstall(dir: string, specs: string[]) {
  const flags = ['--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error']
  return run('npm', ['install', ...flags, ...specs], { cwd: dir, env })
}

/** True when the package at `dir` needs `name` installed: a dependency or a peer that is not optional. */
function requires(dir: string, name: string): boolean {
  const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
  if (pkg.dependencies?.[name] !== undefined) return true
  return pkg.peerDependencies?.[name] !== undefined && pkg.peerDependenciesMeta?.[name]?.optional !== true
}

/** Writes a tsconfig into the scratch app and type-checks it; resolves to tsc's report ('' when clean). */
function typeCheck(name: string, config: object): Promise<string> {
  writeFileSync(join(app, name), JSON.stringify(config))
  return checker.check(app, name).then((r) => r.stdout)
}

interface Report {
  legacy: unknown
  prefixed: unknown
  unprefixed: unknown
  calls: unknown
  shutdown: {
    closed: unknown
    closeMs: number
    pluginTimeout: number
    calls: Record<'slowHttp' | 'slowWebSocket' | 'slowTcp' | 'hangWebSocket' | 'hangTcp', unknown>
  }
  keptAlive: string[]
  exitedByItself: boolean
}

/**
 * Runs the consumer; its report is its one stdout line, printed once nothing keeps it alive (its `keptAlive`), so
 * it should then exit by itself: killed 30 s after the report (at load 27 a 2 s bound killed a healthy exit).
 */
function runApp(file: string): Promise<Report> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [file], { cwd: app, env, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    let killer: NodeJS.Timeout | undefined
    const deadline = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('\n') && killer === undefined) killer = setTimeout(() => child.kill('SIGKILL'), 30_000)
    })
    child.on('close', (code, signal) => {
      clearTimeout(deadline)
      clearTimeout(killer)
      const line = out.split('\n')[0] ?? ''
      if (!line) return reject(new Error(`the consumer printed no report (exit ${code ?? signal})`))
      resolvePromise({ ...(JSON.parse(line) as Omit<Report, 'exitedByItself'>), exitedByItself: code === 0 })
    })
  })
}

function walk(dir: string): string[] {
  return readdirSync(dir).flatMap((e) => {
    const path = join(dir, e)
    return statSync(path).isDirectory() ? walk(path) : [path]
  })
}

function rel(file: string): string {
  return relative(join(app, 'node_modules'), file)
}

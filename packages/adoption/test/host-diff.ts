// Issue 40 "Done when": an existing service with every official plugin (consumer/host-diff.ts), installed
// from the tarballs with npm and type-checked strictly, is run without Trivium and with Trivium's packages
// registered (package defaults) before and after the service's own plugins and routes. Every answer of the
// service's routes (status, headers, body), its log lines, its WebSocket echo, `request.user`, its OpenAPI
// document and the process warnings must be the same, as must `request.user` on a route opted in to Trivium's
// rules (its headers are Trivium's to add); Trivium's own endpoint answers with Trivium's error
// body over HTTP and /ws. Used by test/adoption.test.ts, which owns the one npm install.
import { spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import type { TypeChecker } from '../../../scripts/test/type-check.ts'

/** The official plugins the service has, installed beside the tarballs (and `ws` for its clients). */
export const officialPlugins = [
  '@fastify/jwt@^10',
  '@fastify/auth@^5',
  '@fastify/helmet@^13',
  '@fastify/cors@^11',
  '@fastify/rate-limit@^11',
  '@fastify/websocket@^11',
  '@fastify/compress@^9',
  '@fastify/swagger@^9',
  'ws@^8',
  '@types/ws@^8',
]

type Mode = 'none' | 'before' | 'after'
interface HostReport {
  startError?: string
  answers: Record<string, unknown>
  webSocketEcho: unknown
  logs: unknown[]
  swagger: unknown
  warnings: string[]
  optedIn: unknown
  trivium?: { http: { status: number; body: unknown }; webSocket: unknown }
}

/** Type-checks consumer/host-diff.ts on its own (it augments `request.user` through @fastify/jwt). */
export async function compileHostDiff(app: string, checker: TypeChecker): Promise<string> {
  writeFileSync(
    join(app, 'tsconfig.host-diff.json'),
    JSON.stringify({
      extends: './tsconfig.json',
      compilerOptions: { outDir: 'dist-host-diff' },
      include: ['host-diff.ts'],
    }),
  )
  return (await checker.check(app, 'tsconfig.host-diff.json')).stdout
}

/** Runs the service once; a refusal or a crash at start becomes `startError` (with the end of stderr). */
function runService(app: string, env: NodeJS.ProcessEnv, mode: Mode): Promise<HostReport> {
  return new Promise((resolve) => {
    const file = join(app, 'dist-host-diff', 'host-diff.js')
    const child = spawn(process.execPath, [file, mode], { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    let err = ''
    const deadline = setTimeout(() => child.kill('SIGKILL'), 60_000)
    child.stdout.on('data', (c: Buffer) => (out += c.toString()))
    child.stderr.on('data', (c: Buffer) => (err += c.toString()))
    child.on('close', (code, signal) => {
      clearTimeout(deadline)
      const line = out.split('\n')[0] ?? ''
      const nothing = {
        answers: {},
        webSocketEcho: undefined,
        logs: [],
        swagger: undefined,
        warnings: [],
        optedIn: undefined,
      }
      if (line) return resolve({ ...nothing, ...(JSON.parse(line) as Partial<HostReport>) })
      const tail = err
        .split('\n')
        .filter((l) => /Error|error/.test(l))
        .slice(0, 2)
        .join(' | ')
      resolve({ ...nothing, startError: `exited ${code ?? signal} without a report: ${tail}` })
    })
  })
}

export async function assertHostUnchanged(t: Test, app: string, env: NodeJS.ProcessEnv) {
  const [none, before, after] = await Promise.all(
    (['none', 'before', 'after'] as const).map((mode) => runService(app, env, mode)),
  )
  if (!none || !before || !after) throw new Error('three runs expected')

  await t.test('without Trivium, the service answers as its plugins and routes say', async (t) => {
    t.equal(none.startError, undefined, 'it starts')
    t.match(none.answers, {
      schemaError: {
        status: 400,
        body: { code: 'FST_ERR_VALIDATION', message: "body must have required property 'name'" },
      },
      schemaValid: { status: 201, body: { created: { name: 'one' } } },
      jwtMissing: { status: 401, body: { code: 'FST_JWT_NO_AUTHORIZATION_IN_HEADER' } },
      jwtValid: { status: 200, body: { user: { sub: 'u1', role: 'admin' } } },
      hookedUser: { status: 200, body: { user: { from: 'the app hook' } } },
      noUser: { status: 200 },
      authRefused: { status: 401, body: { message: 'refused by the app' } },
      teapot: { status: 418, body: { message: 'I am a teapot' } },
      unavailable: { status: 503, body: { message: 'maintenance' } },
      appErrorHandler: { status: 409, body: { handledBy: 'the app' } },
      limited: [{ status: 200 }, { status: 200 }, { status: 429, headers: { 'retry-after': '<seconds>' } }],
      helmet: { status: 200, headers: { 'x-frame-options': 'SAMEORIGIN' } },
      corsPreflight: { status: 204, headers: { 'access-control-allow-origin': 'https://app.example.com' } },
      corsPreflightOtherOrigin: { status: 204 },
      corsSimple: { status: 200, headers: { 'access-control-allow-origin': 'https://app.example.com' } },
      compressed: { status: 200, headers: { 'content-encoding': 'gzip' } },
      notFound: { status: 404, body: { message: 'Route GET:/nope not found' } },
    })
    t.same(none.webSocketEcho, { message: 'echo: hello' }, "the app's WebSocket route echoes")
    t.same(none.warnings, [], 'no process warning')
    t.same(
      none.optedIn,
      { status: 200, body: { user: { sub: 'u1', role: 'admin' } } },
      "a route with config.triviumRoute: @fastify/jwt's request.user",
    )
  })

  for (const [order, withTrivium] of [
    ['Trivium registered before the service', before],
    ['Trivium registered after the service', after],
  ] as const) {
    await t.test(`${order}: the service's part is identical`, async (t) => {
      t.equal(withTrivium.startError, undefined, 'it starts (package defaults beside @fastify/cors)')
      if (withTrivium.startError !== undefined) return // nothing else to compare
      for (const [name, answer] of Object.entries(none.answers))
        t.same(withTrivium.answers[name], answer, `the same answer: ${name}`)
      t.same(withTrivium.webSocketEcho, none.webSocketEcho, "the app's WebSocket echo")
      t.same(withTrivium.logs, none.logs, "the log lines of the service's requests (level, msg, err, status)")
      t.same(withTrivium.swagger, none.swagger, "@fastify/swagger's document, Trivium's paths left out")
      t.same(withTrivium.warnings, none.warnings, 'no process warning (FSTWRN004: an error handler replaced)')
      t.same(
        withTrivium.optedIn,
        none.optedIn,
        "on the opted-in route (auth 'public'), request.user is still @fastify/jwt's",
      )
    })
    await t.test(`${order}: Trivium's endpoint answers with Trivium's error body`, async (t) => {
      const refusal = {
        statusCode: 401,
        code: 'TRV_UNAUTHORIZED',
        error: 'UnauthorizedException',
        message: 'Authentication required',
      }
      t.match(withTrivium.trivium?.http, { status: 401, body: refusal }, 'over HTTP')
      const { error: name, ...rest } = refusal
      t.same(withTrivium.trivium?.webSocket, { error: { name, ...rest } }, 'over /ws (@trivium/client)')
    })
  }
}

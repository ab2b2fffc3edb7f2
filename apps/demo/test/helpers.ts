import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Test } from 'tap'
import { buildApp } from '../dist/app.js'
import { type DemoConfig, loadConfig } from '../dist/config.js'

export const ADMIN = { username: 'admin', password: 'Adm1n!Passw0rd' }

/** A demo app on a fresh data folder (PGlite), TCP on a random port, no logs. */
export async function startDemo(t: Test, overrides: Partial<DemoConfig> = {}) {
  const dataDir = mkdtempSync(join(tmpdir(), 'trivium-demo-'))
  const config: DemoConfig = {
    ...loadConfig({}),
    dataDir,
    port: 0,
    tcpPort: 0,
    logLevel: 'silent',
    adminPassword: ADMIN.password,
    ...overrides,
  }
  const demo = await buildApp(config)
  t.teardown(async () => {
    await demo.app.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
  return { ...demo, config }
}

export async function registerAndLogin(
  app: Awaited<ReturnType<typeof startDemo>>['app'],
  username: string,
  password = 'Str0ng!Passw0rd',
) {
  const reg = await app.inject({
    method: 'POST',
    url: '/auth/register',
    payload: { username, email: `${username}@example.com`, password },
  })
  if (reg.statusCode !== 201) throw new Error(`register failed: ${reg.body}`)
  const login = await app.inject({ method: 'POST', url: '/auth/login', payload: { username, password } })
  if (login.statusCode !== 200) throw new Error(`login failed: ${login.body}`)
  return {
    user: reg.json(),
    tokens: login.json() as { accessToken: string; refreshToken: string; expiresIn: number },
  }
}

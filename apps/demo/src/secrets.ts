// The three secrets of the spec. In production they must come from the environment; in development a
// missing one is generated once and kept in the data folder (mode 0600), with a warning.
import { randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DemoConfig } from './config.js'

export interface Secrets {
  signingSecret: string
  encryptionKey: string
  hashSalt: string
}

export class MissingSecretsError extends Error {
  readonly code = 'TRV_MISSING_SECRETS'
  constructor(names: string[]) {
    super(
      `refusing to start with NODE_ENV=production: set ${names.join(', ')} (no secrets are generated in production)`,
    )
    this.name = 'MissingSecretsError'
  }
}

const ENV_NAMES = {
  signingSecret: 'SIGNING_SECRET',
  encryptionKey: 'ENCRYPTION_KEY',
  hashSalt: 'HASH_SALT',
} as const

function generate(): Secrets {
  return {
    signingSecret: randomBytes(48).toString('base64url'),
    encryptionKey: randomBytes(32).toString('base64'),
    hashSalt: randomBytes(32).toString('base64url'),
  }
}

/** Resolves the secrets; `warn` is told (without values) which ones were generated. */
export function loadSecrets(config: DemoConfig, warn: (message: string) => void): Secrets {
  const given: Partial<Secrets> = {
    signingSecret: config.signingSecret,
    encryptionKey: config.encryptionKey,
    hashSalt: config.hashSalt,
  }
  const missing = (Object.keys(ENV_NAMES) as (keyof Secrets)[]).filter((k) => !given[k])
  if (missing.length === 0) return given as Secrets
  if (config.production) throw new MissingSecretsError(missing.map((k) => ENV_NAMES[k]))

  mkdirSync(config.dataDir, { recursive: true })
  const file = join(config.dataDir, 'dev-secrets.json')
  let stored: Secrets
  if (existsSync(file)) {
    stored = JSON.parse(readFileSync(file, 'utf8')) as Secrets
  } else {
    stored = generate()
    writeFileSync(file, JSON.stringify(stored, null, 2), { mode: 0o600 })
    chmodSync(file, 0o600)
  }
  warn(
    `development mode: ${missing.map((k) => ENV_NAMES[k]).join(', ')} not set, using generated values kept in ${file}. ` +
      'Set them in the environment for production (NODE_ENV=production refuses to start without them).',
  )
  return { ...stored, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v)) } as Secrets
}

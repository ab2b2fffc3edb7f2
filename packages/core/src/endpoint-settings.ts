// Endpoint settings that are rules (`auth`, `permissions`, `rateLimit`, …) hold only where a middleware
// enforces them. Checked at `ready()`, for every endpoint and every plain route with
// `config.triviumRoute`: a setting no registered plugin knows is a typo (named with the closest known
// name), and a rule with no enforcing middleware in the chain of its context refuses to start, naming
// the plugin to register — never served unenforced.
import { closestName } from './endpoint-names.js'
import type { Middleware } from './middleware.js'

/** The settings each marked middleware enforces. */
const ENFORCES = new WeakMap<Middleware, readonly string[]>()

/**
 * Marks a middleware as the enforcer of endpoint settings (e.g. `['permissions', 'roles']`). Wherever
 * it is used (`trivium.use`), those settings are known, and satisfied for the endpoints its chain covers.
 */
export function enforcesSettings<T extends Middleware>(settings: readonly string[], fn: T): T {
  ENFORCES.set(fn, Object.freeze([...settings]))
  return fn
}

/** The settings a middleware was marked as enforcing (`enforcesSettings`). */
export function enforcedSettings(fn: Middleware): readonly string[] {
  return ENFORCES.get(fn) ?? []
}

/** Core's own endpoint options. */
const CORE_SETTINGS = new Set([
  'method',
  'url',
  'request',
  'response',
  'status',
  'timeoutMs',
  'summary',
  'bodyLimit',
])

/** The settings of Trivium's plugins, and the plugin that gives each (named when it is missing). */
const TRIVIUM_SETTINGS: Readonly<Record<string, string>> = {
  auth: '@trivium/auth',
  permissions: '@trivium/rbac',
  roles: '@trivium/rbac',
  liveRbac: '@trivium/rbac',
  rateLimit: '@trivium/protections',
  validate: '@trivium/validation',
  sanitize: '@trivium/validation',
  idempotencyKey: "@trivium/core's idempotency middleware",
}

/**
 * Settings read only to describe an endpoint: nothing to enforce. `name`, `streaming`, `requestStream` and `resume` are
 * fields of an endpoint table entry (`EndpointSpec` of @trivium/codec and @trivium/client), passed as
 * options as is. (A table entry's `config` is not among them: its rules belong in the options.)
 */
const DESCRIPTIVE_SETTINGS = new Set(['errorStatuses', 'name', 'streaming', 'resume', 'requestStream'])

/** A value that asks for nothing: no rule to enforce. */
function asksNothing(setting: string, value: unknown): boolean {
  if (value === undefined || value === false) return true
  if (Array.isArray(value)) return value.length === 0
  return setting === 'auth' && value === 'public'
}

export interface SettingsTarget {
  /** `endpoint "tasks.create"` or `route GET /legacy`. */
  readonly label: string
  /** The declared settings: endpoint options, or a plain route's `config.triviumRoute`. */
  readonly settings: object
  /** Extra keys this kind of target has (a plain route's `name`). */
  readonly ownKeys?: readonly string[]
  /** Settings that apply without being written (a plain route's `auth`, `required` by default). */
  readonly defaults?: Readonly<Record<string, unknown>>
}

export class EndpointSettingsError extends Error {
  readonly code = 'TRV_ENDPOINT_SETTINGS'
  constructor(message: string) {
    super(`@trivium/core: ${message}`)
    this.name = 'EndpointSettingsError'
  }
}

/**
 * Throws EndpointSettingsError for the first unknown setting of `target` or the first rule nothing in
 * its chain enforces. `enforcedHere`: the settings its chain enforces; `knownAnywhere`: every setting a
 * registered middleware enforces.
 */
export function checkSettings(
  target: SettingsTarget,
  enforcedHere: ReadonlySet<string>,
  knownAnywhere: ReadonlySet<string>,
): void {
  const own = target.ownKeys ?? []
  const known = (key: string) =>
    CORE_SETTINGS.has(key) ||
    own.includes(key) ||
    key in TRIVIUM_SETTINGS ||
    DESCRIPTIVE_SETTINGS.has(key) ||
    knownAnywhere.has(key)
  const declared = { ...target.defaults, ...target.settings }
  for (const key of Object.keys(declared)) {
    if (!known(key)) {
      const candidates = [...CORE_SETTINGS, ...own, ...Object.keys(TRIVIUM_SETTINGS), ...knownAnywhere]
      const closest = closestName(candidates, key)
      const hint = closest === undefined ? '' : ` (did you mean "${closest}"?)`
      throw new EndpointSettingsError(
        `${target.label}: unknown setting "${key}"${hint}. A setting read by your own middleware is declared with enforcesSettings(["${key}"], middleware).`,
      )
    }
  }
  for (const [key, value] of Object.entries(declared)) {
    if (CORE_SETTINGS.has(key) || own.includes(key) || DESCRIPTIVE_SETTINGS.has(key)) continue
    if (asksNothing(key, value) || enforcedHere.has(key)) continue
    const plugin = TRIVIUM_SETTINGS[key]
    const fix =
      plugin === undefined
        ? `use the middleware that enforces "${key}" in this context or an ancestor`
        : `register ${plugin} in this context or an ancestor`
    throw new EndpointSettingsError(
      `${target.label} declares ${key}: ${JSON.stringify(value)}, but no middleware enforces "${key}" where it is registered: ${fix}`,
    )
  }
}

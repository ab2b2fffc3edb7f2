// A connection's logger, `parent.child({ connection: id })`, made when the connection first writes a
// line (bench/density: an idle WebSocket session held two pino loggers, ~0.7 KiB with the hidden classes
// a child of a per-request logger gets; most connections never log). The parent is the logger the
// transport gave before (WebSocket: the upgrade request's `request.log`, made by the application's
// `childLoggerFactory`), so every line is what the child made at connect would have written.
import type { FastifyBaseLogger } from 'fastify'

/** The lines a child made without options writes at its parent's level: asked of the parent first. */
const LEVEL_METHODS = new Set(['fatal', 'error', 'warn', 'info', 'debug', 'trace'])

/** Reads a connection logger's state through its proxy (no child is made for it). */
const STATE = Symbol('trivium.connectionLogger')

interface Pending {
  readonly parent: FastifyBaseLogger
  readonly id: string
  child: FastifyBaseLogger | undefined
  /** Whose `log` becomes the child once it is made (the session: later calls get it without the proxy). */
  owner: { log: FastifyBaseLogger } | undefined
  /** The child's methods bound to it (`this` is the child, not the proxy), remade if the child's change. */
  bound: Map<PropertyKey, { method: unknown; bound: unknown }> | undefined
}

type LevelCheck = { isLevelEnabled?: (level: string) => boolean }

function childOf(state: Pending): FastifyBaseLogger {
  if (state.child === undefined) {
    state.child = state.parent.child({ connection: state.id })
    if (state.owner !== undefined) state.owner.log = state.child
  }
  return state.child
}

/**
 * A line at a level the parent does not write: the parent's own method (pino's no-op), nothing made.
 * A child without options has its parent's level (pino: inherited), so it would not write it either.
 */
function unwritten(state: Pending, key: PropertyKey): unknown {
  if (state.child !== undefined || typeof key !== 'string' || !LEVEL_METHODS.has(key)) return undefined
  const parent = state.parent as FastifyBaseLogger & LevelCheck
  if (typeof parent.isLevelEnabled !== 'function' || parent.isLevelEnabled(key)) return undefined
  return parent[key as 'info']
}

function boundMethod(state: Pending, key: PropertyKey, method: unknown, child: object): unknown {
  if (typeof method !== 'function') return method
  state.bound ??= new Map()
  const known = state.bound.get(key)
  if (known !== undefined && known.method === method) return known.bound
  const bound = method.bind(child)
  state.bound.set(key, { method, bound })
  return bound
}

/** Every operation on the connection's logger is the child's (made first), but a line nobody writes. */
const handler: ProxyHandler<Pending> = {
  get(state, key) {
    if (key === STATE) return state
    const noop = unwritten(state, key)
    if (noop !== undefined) return noop
    const child = childOf(state)
    return boundMethod(state, key, Reflect.get(child, key), child)
  },
  set: (state, key, value) => Reflect.set(childOf(state), key, value),
  has: (state, key) => Reflect.has(childOf(state), key),
  ownKeys: (state) => Reflect.ownKeys(childOf(state)),
  getOwnPropertyDescriptor: (state, key) => Reflect.getOwnPropertyDescriptor(childOf(state), key),
  defineProperty: (state, key, descriptor) => Reflect.defineProperty(childOf(state), key, descriptor),
  deleteProperty: (state, key) => Reflect.deleteProperty(childOf(state), key),
  getPrototypeOf: (state) => Reflect.getPrototypeOf(childOf(state)),
  setPrototypeOf: (state, prototype) => Reflect.setPrototypeOf(childOf(state), prototype),
}

/** `parent.child({ connection: id })`, made on the connection's first written line or other use. */
export function connectionLogger(parent: FastifyBaseLogger, id: string): FastifyBaseLogger {
  const state: Pending = { parent, id, child: undefined, owner: undefined, bound: undefined }
  return new Proxy(state, handler) as unknown as FastifyBaseLogger
}

/**
 * `owner.log` is `log`; once a connection logger's child is made, `owner.log` becomes the child itself,
 * so that later lines do not pass through the proxy (~85 ns a written line). Any other logger: nothing.
 */
export function ownLogger(log: FastifyBaseLogger, owner: { log: FastifyBaseLogger }): void {
  const state = (log as unknown as Record<symbol, Pending | undefined>)[STATE]
  if (state === undefined) return
  if (state.child !== undefined) owner.log = state.child
  else state.owner = owner
}

// Middleware step of the lifecycle. One contract on every transport (spec "What the service does" §5):
//   async (call, next) => response
// A middleware may act before and after `await next()`, short-circuit by returning a value without
// calling `next`, or abort by throwing. For a streaming endpoint the pipeline runs once, when the
// stream opens, and `next()` resolves to the AsyncIterable of items.
import type { TriviumCall } from './call.js'
import type { CallDeadline } from './deadline.js'
import { enforcedSettings } from './endpoint-settings.js'
import type { CallTarget } from './registry.js'
import { SETUP } from './setup-errors.js'

export type Next = () => Promise<unknown>
/**
 * A step of the chain. It sees endpoint calls and, where @trivium/auth guards plain routes, calls to
 * those routes (`call.definition.kind === 'route'`: no models or status; `next()` resolves once Fastify
 * has sent the route's response, with its RouteOutcome).
 */
export type Middleware = (call: TriviumCall<any, CallTarget>, next: Next) => Promise<unknown> | unknown

/** The middleware marked with `directMiddleware`. */
const DIRECT = new WeakSet<Middleware>()

/**
 * Marks a middleware that hands on what `next()` returns without awaiting it or calling `.then` on it
 * (it returns `next()` itself, or a promise it made before calling `next`). Its `next()` then returns
 * the next step's value as it is, a plain value when nothing on the way is asynchronous, so a chain of
 * such middleware and a synchronous handler finish without a promise or a microtask. Any other
 * middleware gets a promise from `next()`, as the `Next` type says.
 */
export function directMiddleware<T extends Middleware>(fn: T): T {
  DIRECT.add(fn)
  return fn
}

/** A chain to run: the functions and, at the same index, whether each takes `next()`'s value as it is. */
interface Chain {
  fns: Middleware[]
  direct: boolean[]
  /** How many `first` middleware (observers) lead the chain: the deadline bounds what comes after them. */
  firsts: number
  /** Some middleware is not direct: it may read what `next()` resolves to. */
  observed: boolean
}

function chainOf(entries: readonly Entry[]): Chain {
  const direct = entries.map((e) => DIRECT.has(e.fn))
  return {
    fns: entries.map((e) => e.fn),
    direct,
    firsts: entries.filter((e) => e.first).length,
    observed: direct.includes(false),
  }
}

export interface MiddlewareOptions {
  /** A name other middleware can refer to in `after`. */
  name?: string
  /** Names that must be registered before this one; checked when the server starts. */
  after?: string[]
  /** Run before every middleware registered without `first` (observers such as metrics, tracing and the
   *  access log must see every call, including ones auth or rate-limit refuse). Firsts keep their order.
   *  Their `next()` settles with the answer the client gets: at a call's deadline, its TimeoutException. */
  first?: boolean
}

interface Entry {
  fn: Middleware
  name: string | undefined
  after: string[]
  /** The Fastify context it was added in (undefined: the context core was registered in, i.e. every endpoint). */
  scope: object | undefined
  first: boolean
}

/** True when `context` is `scope` or one of its descendants (Fastify children inherit by prototype). */
function within(scope: object, context: object | undefined): boolean {
  return context !== undefined && (context === scope || Object.prototype.isPrototypeOf.call(scope, context))
}

/**
 * True when two middleware scopes share endpoints: one is the other or encloses it (undefined is core's
 * own context, which encloses every other). Sibling contexts share none.
 */
function overlapping(a: object | undefined, b: object | undefined): boolean {
  return a === undefined || b === undefined || within(a, b) || within(b, a)
}

export class MiddlewareOrderError extends Error {
  readonly code = 'TRV_MIDDLEWARE_ORDER'
  constructor(message: string) {
    super(`@trivium/core: ${message}`)
    this.name = 'MiddlewareOrderError'
  }
}

export class Pipeline {
  private readonly entries: Entry[] = []
  private chain: Chain = chainOf([])
  private scoped = false
  private readonly contexts = new WeakMap<CallTarget, object>()
  private chains = new WeakMap<CallTarget, Chain>()

  /**
   * Adds a middleware. With `scope` (a Fastify instance), it runs only for the endpoints registered in
   * that context or its descendants (`child.trivium.use()`); without, for every endpoint. A name is
   * unique along each chain of contexts: sibling contexts may each have their own "auth" (own secret,
   * issuer, public endpoints), but a context and one inside it may not, since an endpoint of the inner
   * one would run both.
   */
  use(fn: Middleware, options: MiddlewareOptions = {}, scope?: object): void {
    if (typeof fn !== 'function') throw SETUP.TRV_CORE_MIDDLEWARE()
    if (options.name && this.entries.some((e) => e.name === options.name && overlapping(e.scope, scope))) {
      throw new MiddlewareOrderError(
        `a middleware named "${options.name}" is already registered in this context, an enclosing one or one inside it: register one per context chain (e.g. each @trivium/auth in its own sibling context, none above them)`,
      )
    }
    const entry = { fn, name: options.name, after: options.after ?? [], scope, first: options.first === true }
    const at = entry.first ? this.entries.findIndex((e) => !e.first) : -1
    if (at === -1) this.entries.push(entry)
    else this.entries.splice(at, 0, entry)
    this.chain = chainOf(this.entries)
    if (scope !== undefined) this.scoped = true
    this.chains = new WeakMap()
  }

  /** Records the Fastify context an endpoint was registered in (for scoped middleware). */
  setContext(definition: CallTarget, context: object): void {
    this.contexts.set(definition, context)
  }

  private entriesFor(definition: CallTarget): Entry[] {
    const context = this.contexts.get(definition)
    return this.entries.filter((e) => e.scope === undefined || within(e.scope, context))
  }

  private chainFor(definition: CallTarget): Chain {
    let chain = this.chains.get(definition)
    if (!chain) {
      chain = chainOf(this.entriesFor(definition))
      this.chains.set(definition, chain)
    }
    return chain
  }

  /**
   * Whether a middleware of `definition`'s chain may read what its `next()` resolves to: one not marked
   * `directMiddleware` (a direct one hands the value on without awaiting it or calling `.then` on it).
   */
  observes(definition: CallTarget): boolean {
    return (this.scoped ? this.chainFor(definition) : this.chain).observed
  }

  /** The endpoint settings the chain of `definition` enforces (`enforcesSettings`). */
  enforcedFor(definition: CallTarget): Set<string> {
    return new Set(this.entriesFor(definition).flatMap((e) => enforcedSettings(e.fn)))
  }

  /** Every endpoint setting some registered middleware enforces, in any context. */
  enforcedAnywhere(): Set<string> {
    return new Set(this.entries.flatMap((e) => enforcedSettings(e.fn)))
  }

  names(): string[] {
    return this.entries.map((e) => e.name ?? '(anonymous)')
  }

  /**
   * Fails loudly when a middleware that must come after another is registered before it or alone. Only
   * middleware that share endpoints with it count (a context's own "auth" for an app-wide "rbac").
   */
  checkOrder(): void {
    this.entries.forEach((entry, index) => {
      for (const required of entry.after) {
        const who = entry.name ?? 'a middleware'
        let found = false
        this.entries.forEach((e, at) => {
          if (e.name !== required || !overlapping(e.scope, entry.scope)) return
          found = true
          if (at > index) throw new MiddlewareOrderError(`"${who}" must be registered after "${required}"`)
        })
        if (!found) throw new MiddlewareOrderError(`"${who}" needs "${required}", which is not registered`)
      }
    })
  }

  /**
   * Runs the chain, then `terminal` (the router): their value, or a promise of it; a step that throws
   * before anything asynchronous happened may throw here. The position lives in a local counter.
   *
   * With a `deadline`, everything after the `first` middleware is bounded by it (deadline.ts): the
   * observers' `next()` settles with the answer the client gets — TimeoutException at the deadline —
   * while the middleware after them (idempotency keeps its key until the handler settles) and the
   * handler see the handler's own outcome.
   */
  run<C extends TriviumCall<any, CallTarget>>(
    call: C,
    terminal: (call: C) => unknown,
    deadline?: CallDeadline,
  ): unknown {
    const chain = this.scoped ? this.chainFor(call.definition) : this.chain
    const fns = chain.fns
    const streaming =
      deadline !== undefined && call.definition.kind === 'endpoint' && call.definition.streaming
    // No middleware: the router directly (its value or promise; callers handle both).
    if (fns.length === 0) {
      return deadline ? deadline.run(call, () => terminal(call), streaming) : terminal(call)
    }
    if (deadline !== undefined) return runBounded(chain, call, terminal, deadline, streaming)
    const direct = chain.direct
    let index = 0
    // One closure per call (bench/README.md "bench/js-path"): `next` takes the step at `index` itself.
    // Called by the middleware at `index - 1`: a direct one takes the next step's value as it is; any
    // other gets a promise (a throw becomes its rejection). The first step is taken as a direct one.
    const next: Next = () => {
      const at = index++
      const fn = fns[at]
      if (at === 0 || direct[at - 1] === true)
        return (fn !== undefined ? fn(call, next) : terminal(call)) as Promise<unknown>
      try {
        return Promise.resolve(fn !== undefined ? fn(call, next) : terminal(call))
      } catch (err) {
        return Promise.reject(err)
      }
    }
    return next()
  }
}

/** `Pipeline.run` with a deadline: the step after the `first` middleware runs under `deadline.run`. */
function runBounded<C extends TriviumCall<any, CallTarget>>(
  chain: Chain,
  call: C,
  terminal: (call: C) => unknown,
  deadline: CallDeadline,
  streaming: boolean,
): unknown {
  const { fns, direct, firsts } = chain
  let index = 0
  const advance = (): unknown => {
    const fn = fns[index]
    index++
    return fn !== undefined ? fn(call, next) : terminal(call)
  }
  const step = (): unknown => (index === firsts ? deadline.run(call, advance, streaming) : advance())
  // As in `Pipeline.run`: a direct middleware takes the next step's value as it is, any other a promise.
  const next: Next = () => {
    if (direct[index - 1] === true) return step() as Promise<unknown>
    try {
      return Promise.resolve(step())
    } catch (err) {
      return Promise.reject(err)
    }
  }
  return step()
}

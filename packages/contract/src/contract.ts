// A contract: the endpoints of a service as data (name → HTTP route, schemas, stream shape), with no
// handler. The server implements it (`fastify.trivium.implement(contract, handlers)`, @trivium/core) and
// the client calls it (`createClient({ contract })`, @trivium/client): both read their types from the
// same schemas, so a change of a schema is a compile error on whichever side no longer fits.
import type { Schema, SchemaInput, SchemaOutput } from './schema-types.js'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE'
export const HTTP_METHODS: readonly HttpMethod[] = ['GET', 'POST', 'PUT', 'DELETE']

/** One endpoint of a contract: the same facts as `trivium.endpoint()`'s options, without settings. */
export interface ContractEndpoint {
  readonly method: HttpMethod
  /** Fastify route path, e.g. `/orders/:id` (the HTTP client fills it from the request's fields). */
  readonly url: string
  /** The request schema (default: any JSON value). */
  readonly request?: Schema
  /** The response schema; for a stream of responses, the schema of one item (default: any JSON value). */
  readonly response?: Schema
  /** HTTP status of a success (default 200). */
  readonly status?: number
  /** The endpoint answers a stream of items (`stream()`, or `bidiStream()` with `requestStream`). */
  readonly streaming?: boolean
  /** The endpoint takes a stream of requests (WebSocket and TCP; `clientStream()` / `bidiStream()`). */
  readonly requestStream?: boolean
  /** One-line description for docs and OpenAPI. */
  readonly summary?: string
}

/** Endpoint name → endpoint. */
export type Contract = Readonly<Record<string, ContractEndpoint>>

/** The request a client sends to an endpoint of a contract. */
export type RequestInput<E extends ContractEndpoint> = SchemaInput<E['request']>
/** The request a handler receives (after validation and a Standard Schema's transforms). */
export type RequestOutput<E extends ContractEndpoint> = SchemaOutput<E['request']>
/** What a handler returns: the response, or one item of a stream of responses. */
export type ResponseInput<E extends ContractEndpoint> = SchemaInput<E['response']>
/** What a client gets back: the response, or one item of a stream of responses. */
export type ResponseOutput<E extends ContractEndpoint> = SchemaOutput<E['response']>

/** How an endpoint is called: `call`, `stream`, `clientStream` or `bidiStream`. */
export type EndpointKind<E extends ContractEndpoint> = E['requestStream'] extends true
  ? E['streaming'] extends true
    ? 'bidiStream'
    : 'clientStream'
  : E['streaming'] extends true
    ? 'stream'
    : 'call'

/** The names of the endpoints of `C` called the way `Kind` says. */
export type NamesOf<C extends Contract, Kind extends string> = {
  [K in keyof C & string]: EndpointKind<C[K]> extends Kind ? K : never
}[keyof C & string]

export class ContractError extends TypeError {
  readonly code = 'TRV_CONTRACT'
  constructor(message: string) {
    super(`@trivium/contract: ${message}`)
    this.name = 'ContractError'
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null
}

/** Throws ContractError naming the first endpoint that is not well formed. */
export function checkContract(contract: unknown): asserts contract is Contract {
  if (!isObject(contract) || Array.isArray(contract)) throw new ContractError('a contract must be an object')
  for (const [name, entry] of Object.entries(contract)) {
    const at = `endpoint "${name}"`
    if (!isObject(entry)) throw new ContractError(`${at} must be an object`)
    if (!HTTP_METHODS.includes(entry.method as HttpMethod)) {
      throw new ContractError(`${at}: method must be one of ${HTTP_METHODS.join(', ')}`)
    }
    if (typeof entry.url !== 'string' || !entry.url.startsWith('/')) {
      throw new ContractError(`${at}: url must be a path starting with /`)
    }
    for (const key of ['request', 'response'] as const) {
      if (entry[key] !== undefined && !isObject(entry[key])) {
        throw new ContractError(
          `${at}: ${key} must be a schema (a model, a Standard Schema or a JSON Schema)`,
        )
      }
    }
    for (const key of ['streaming', 'requestStream'] as const) {
      if (entry[key] !== undefined && typeof entry[key] !== 'boolean') {
        throw new ContractError(`${at}: ${key} must be a boolean`)
      }
    }
  }
}

/**
 * Declares a contract. Returns it as given (frozen), with the literal types TypeScript needs to type
 * handlers and calls: import the result from the server and from the client.
 */
export function defineContract<const C extends Contract>(contract: C): C {
  checkContract(contract)
  return Object.freeze({ ...contract })
}

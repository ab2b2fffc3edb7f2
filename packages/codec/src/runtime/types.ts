// Types shared by generated code and its users. Browser-safe and free of @trivium/core (the shapes
// match core's Model and JsonSchema structurally).
import type { FieldError } from './errors.js'
import type { BinaryReader } from './reader.js'
import type { BinaryWriter } from './writer.js'

export type JsonSchema = Record<string, unknown> & {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
}

/**
 * The static side of a generated model class: the class itself is a model (it satisfies
 * @trivium/core's `Model<T>`), e.g. `{ request: CreateTask, response: Task }`.
 */
export interface ModelClass<T, D = T> {
  readonly name: string
  readonly jsonSchema: JsonSchema
  fromJSON(json: unknown): T
  toJSON(value: D): unknown
  encode(value: D): Uint8Array
  decode(bytes: Uint8Array): T
  write(w: BinaryWriter, value: D): void
  read(r: BinaryReader): T
  equalsValue(a: D, b: D): boolean
  hashValue(value: D): number
}

/**
 * Custom binary read/write logic for a type (the spec's extension point). Declare it in the schema
 * (`"types": { "Money": { "import": "./money.js" } }`) and use `Money` as a type expression; the
 * generated code calls these functions in place of built-in ones.
 */
export interface CustomType<T> {
  /** Type name, used in messages. */
  readonly name: string
  /** JSON Schema of the JSON form. */
  readonly jsonSchema: JsonSchema
  /** Fewest bytes one encoded value takes (default 1): bounds list counts before allocating. */
  readonly minSize?: number
  write(w: BinaryWriter, value: T): void
  /** Reads one value; throw via `r.fail(reason)` on bad bytes. */
  read(r: BinaryReader): T
  /** Checks and converts the JSON form; throw an Error whose message says what is wrong. */
  fromJSON(json: unknown): T
  toJSON(value: T): unknown
  /** Default: equality of the JSON forms. */
  equals?(a: T, b: T): boolean
  /** Default: hash of the JSON form. */
  hash?(value: T): number
}

/** The value type of a CustomType. */
export type CustomValue<C> = C extends CustomType<infer T> ? T : never

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'DELETE'

/** One entry of a generated `endpoints` table (schema section `endpoints`). */
export interface EndpointSpec<Req = unknown, Res = unknown> {
  readonly name: string
  readonly method: HttpMethod
  readonly url: string
  readonly status: number
  readonly request: ModelClass<Req, any>
  readonly response: ModelClass<Res, any>
  readonly streaming: boolean
  /** Takes a stream of requests (PROTOCOL.md "Client and bidirectional streams"). */
  readonly requestStream?: boolean
  /** Pass-through settings (auth, permissions, roles, rateLimit, ...), given to `trivium.endpoint`. */
  readonly config: Readonly<Record<string, unknown>>
}

/** What `createTypedClient` wraps: any Trivium client (HTTP, WebSocket, TCP). */
/** Per-call options a runtime client accepts (both are optional for a client to honour). */
export interface CallOptions {
  /** Deadline for this call in ms. */
  timeoutMs?: number
  /** Aborting cancels the call or stream. */
  signal?: AbortSignal
}

/** The sending half of a stream of requests, as @trivium/client's `RequestStream`. */
export interface RuntimeRequestStream<Req> {
  send(item: Req): Promise<boolean>
  sendAll(items: Iterable<Req> | AsyncIterable<Req>): Promise<boolean>
  end(): Promise<void>
  cancel(reason?: unknown): void
}

/** A client stream: items out, one response back. */
export interface RuntimeClientStream<Req, Res> extends RuntimeRequestStream<Req> {
  readonly response: Promise<Res>
}

/** A bidirectional stream: items out, and the iterable of the server's items. */
export interface RuntimeBidiStream<Req, Item> extends RuntimeRequestStream<Req>, AsyncIterable<Item> {}

export interface RuntimeClient {
  call(endpoint: string, request: unknown, options?: CallOptions): Promise<unknown>
  stream(endpoint: string, request: unknown, options?: CallOptions): AsyncIterable<unknown>
  /** Streams of requests (WebSocket and TCP clients); optional so any client still fits the typed view. */
  clientStream?(endpoint: string, options?: CallOptions): RuntimeClientStream<unknown, unknown>
  bidiStream?(endpoint: string, options?: CallOptions): RuntimeBidiStream<unknown, unknown>
}

export type { FieldError }

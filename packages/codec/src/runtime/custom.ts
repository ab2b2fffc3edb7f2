// Helpers generated code uses for custom types (CustomType) and typed clients.
import type { FieldError } from './errors.js'
import type {
  CallOptions,
  CustomType,
  ModelClass,
  RuntimeBidiStream,
  RuntimeClient,
  RuntimeClientStream,
} from './types.js'
import { eqAny, fail, hashAny } from './values.js'

export function jCustom<T>(
  type: CustomType<T>,
  j: unknown,
  e: FieldError[],
  p: string,
  k: string | number,
): T {
  if (j === undefined) {
    fail(e, p, k, 'is required')
    return undefined as T
  }
  try {
    return type.fromJSON(j)
  } catch (err) {
    fail(e, p, k, err instanceof Error ? err.message : `must be ${type.name}`)
    return undefined as T
  }
}

export function eqCustom<T>(type: CustomType<T>, a: T, b: T): boolean {
  return type.equals ? type.equals(a, b) : eqAny(type.toJSON(a), type.toJSON(b))
}

export function hashCustom<T>(type: CustomType<T>, v: T): number {
  return type.hash ? type.hash(v) : hashAny(type.toJSON(v))
}

/**
 * A typed client's view of a response: an instance already, bytes (binary), or the JSON form.
 */
export function asModel<T>(model: ModelClass<T, any>, value: unknown): T {
  if (value instanceof (model as unknown as abstract new (...args: never[]) => unknown)) return value as T
  if (value instanceof Uint8Array) return model.decode(value)
  return model.fromJSON(value)
}

/** Maps a stream of responses with `asModel`. */
export async function* asModels<T>(
  model: ModelClass<T, any>,
  items: AsyncIterable<unknown>,
): AsyncIterable<T> {
  for await (const item of items) yield asModel(model, item)
}

function needs(client: RuntimeClient, method: 'clientStream' | 'bidiStream', name: string): void {
  if (typeof client[method] !== 'function') {
    throw new TypeError(
      `@trivium/codec: ${name} takes a stream of requests, and this client has no ${method}() (use a WebSocket or TCP client of @trivium/client)`,
    )
  }
}

/** A typed client stream: the runtime client's handle with its response read as `model`. */
export function openClientStream<Req, Res>(
  model: ModelClass<Res, any>,
  client: RuntimeClient,
  name: string,
  options?: CallOptions,
): RuntimeClientStream<Req, Res> {
  needs(client, 'clientStream', name)
  const call = (client.clientStream as NonNullable<RuntimeClient['clientStream']>)(name, options)
  const response = call.response.then((value) => asModel(model, value))
  response.catch(() => {}) // a caller that only sends must not see an unhandled rejection
  return {
    send: (item) => call.send(item),
    sendAll: (items) => call.sendAll(items),
    end: () => call.end(),
    cancel: (reason) => call.cancel(reason),
    response,
  }
}

/** A typed bidirectional stream: the runtime client's handle with its items read as `model`. */
export function openBidiStream<Req, Item>(
  model: ModelClass<Item, any>,
  client: RuntimeClient,
  name: string,
  options?: CallOptions,
): RuntimeBidiStream<Req, Item> {
  needs(client, 'bidiStream', name)
  const call = (client.bidiStream as NonNullable<RuntimeClient['bidiStream']>)(name, options)
  return {
    send: (item) => call.send(item),
    sendAll: (items) => call.sendAll(items),
    end: () => call.end(),
    cancel: (reason) => call.cancel(reason),
    [Symbol.asyncIterator]: () => asModels(model, call)[Symbol.asyncIterator](),
  }
}

// Serializer step of the lifecycle: the wire formats a payload can be in, and how one is chosen.
// JSON is built in; @trivium/codec adds `application/x-platform-binary` with `addFormat`.
import {
  BINARY_CONTENT_TYPE,
  JSON_CONTENT_TYPE,
  JSON_TOO_DEEP_MESSAGE,
  MAX_JSON_DEPTH,
  shortAscii,
} from '@trivium/wire'
import { INVALID_JSON_MESSAGE, UnsupportedMediaTypeException, ValidationException } from './errors.js'
import type { Model } from './model.js'
import { isSchemaModel } from './models/resolve.js'

export { BINARY_CONTENT_TYPE, JSON_CONTENT_TYPE }

export interface WireFormat {
  /** Short name used on WS/TCP connections and in docs: `json`, `binary`. */
  readonly name: string
  /** The media type on HTTP. */
  readonly contentType: string
  /** Bytes → model value. Throws ValidationException on bad input. */
  decode(model: Model, bytes: Uint8Array): unknown
  /** Model value → bytes (or text, which the transport encodes as UTF-8). */
  encode(model: Model, value: unknown): Uint8Array | string
  /**
   * The binary form of a model built from a schema (TypeBox, Standard Schema, JSON Schema) whose JSON
   * Schema has a layout in this format, or undefined (the model stays JSON-only). Core calls it for
   * every such model of an endpoint, whichever was registered first.
   */
  derive?(model: Model): Pick<Model, 'encode' | 'decode'> | undefined
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true })

/** Strict UTF-8 decode: invalid bytes are a ValidationException, never a TypeError. */
export function decodeUtf8(bytes: Uint8Array, what = 'Payload'): string {
  const ascii = shortAscii(bytes)
  if (ascii !== undefined) return ascii
  try {
    return strictUtf8.decode(bytes)
  } catch {
    throw new ValidationException(`${what} is not valid UTF-8`)
  }
}

export { INVALID_JSON_MESSAGE }

// Keys that could reach an object's prototype if a handler copied the value (`Object.assign`, spread
// into a class instance): refused in every JSON decoder (PROTOCOL.md "Decoding rules").
function forbiddenKey(key: string, value: unknown): boolean {
  return (
    key === '__proto__' ||
    (key === 'constructor' && typeof value === 'object' && value !== null && 'prototype' in value)
  )
}

export const LONE_SURROGATE_MESSAGE =
  'must not contain a lone surrogate (a \\uD800-\\uDFFF escape without its pair)'

// A lone surrogate (`"\ud800"`) is valid JSON text but not Unicode text: UTF-8 cannot carry it, so it
// would be stored (and echoed) as U+FFFD. Every Unicode JSON text decodes to well-formed strings; only
// a `\u` escape can produce an unpaired one.
// String.prototype.isWellFormed (Node 20; typed from ES2024, this package's lib is ES2023) costs about
// half of /\p{Cs}/u per string: it runs on every string and key of every JSON HTTP body.
const isWellFormed = (String.prototype as unknown as { isWellFormed: (this: string) => boolean }).isWellFormed
const lone = (text: string): boolean => !isWellFormed.call(text)

/** What a walk over a parsed JSON value found first. */
const Found = { Nothing: 0, LoneSurrogate: 1, TooDeep: 2, ForbiddenKey: 3 } as const
type Found = (typeof Found)[keyof typeof Found]

/**
 * One walk over a parsed JSON value, bounded by MAX_JSON_DEPTH (`left`: levels still allowed): its own
 * recursion never goes deeper than that, whatever the client sent. `strings`: look for lone surrogates
 * in strings and keys; `keys`: look for prototype keys. The clean case builds no paths.
 */
function scan(value: unknown, left: number, strings: boolean, keys: boolean): Found {
  if (typeof value === 'string') return strings && lone(value) ? Found.LoneSurrogate : Found.Nothing
  if (typeof value !== 'object' || value === null) return Found.Nothing
  if (left === 0) return Found.TooDeep
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = scan(value[i], left - 1, strings, keys)
      if (found !== Found.Nothing) return found
    }
    return Found.Nothing
  }
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key]
    if (keys && forbiddenKey(key, item)) return Found.ForbiddenKey
    if (strings && lone(key)) return Found.LoneSurrogate
    const found = scan(item, left - 1, strings, keys)
    if (found !== Found.Nothing) return found
  }
  return Found.Nothing
}

/**
 * The path of the first string (value or key) holding a lone surrogate (`title`, `tags[1]`). Run only
 * after `scan` found one: it walks the same way and stops there, within the levels `scan` checked.
 */
function loneSurrogatePath(value: unknown, path: string, left: number): string | undefined {
  if (typeof value === 'string') return lone(value) ? path : undefined
  if (typeof value !== 'object' || value === null || left === 0) return undefined
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = loneSurrogatePath(value[i], `${path}[${i}]`, left - 1)
      if (found !== undefined) return found
    }
    return undefined
  }
  for (const key in value) {
    // A key is named with JSON's escape (`\ud800`): the error body must not carry the surrogate itself.
    if (lone(key))
      return path ? `${path}.${JSON.stringify(key).slice(1, -1)}` : JSON.stringify(key).slice(1, -1)
    const item = (value as Record<string, unknown>)[key]
    const found = loneSurrogatePath(item, path ? `${path}.${key}` : key, left - 1)
    if (found !== undefined) return found
  }
  return undefined
}

/** The refusal for what `scan` found, or nothing when the value is clean. */
function refuse(model: Model, json: unknown, found: Found): void {
  if (found === Found.Nothing) return
  if (found === Found.TooDeep) throw new ValidationException(JSON_TOO_DEEP_MESSAGE)
  if (found === Found.ForbiddenKey) throw new ValidationException(INVALID_JSON_MESSAGE)
  const name = loneSurrogatePath(json, '', MAX_JSON_DEPTH) || '(body)'
  throw new ValidationException(`Invalid ${model.name}: ${name} ${LONE_SURROGATE_MESSAGE}`, [
    { field: name, message: LONE_SURROGATE_MESSAGE },
  ])
}

/** JSON.parse, its SyntaxError as the one 400 (V8's parser does not recurse: any depth parses). */
function parseText(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new ValidationException(INVALID_JSON_MESSAGE)
  }
}

/** True when the text could hold a prototype key (a literal one, or one written with `\\u` escapes). */
const riskyKeys = (text: string): boolean =>
  text.includes('__proto__') || text.includes('prototype') || text.includes('\\u')

/**
 * The one JSON text parser of Trivium: invalid JSON, a `__proto__` key or a `constructor` object with
 * a `prototype` key are a ValidationException `Request body is not valid JSON`; arrays and objects
 * nested deeper than MAX_JSON_DEPTH are one too (JSON_TOO_DEEP_MESSAGE). The key check only runs when
 * the text could hold such a key (a literal one, or a `\u` escape).
 */
export function parseJson(text: string): unknown {
  const json = parseText(text)
  const found = scan(json, MAX_JSON_DEPTH, false, riskyKeys(text))
  if (found === Found.TooDeep) throw new ValidationException(JSON_TOO_DEEP_MESSAGE)
  if (found === Found.ForbiddenKey) throw new ValidationException(INVALID_JSON_MESSAGE)
  return json
}

/**
 * Refuses a parsed JSON request value nested deeper than MAX_JSON_DEPTH or holding a lone surrogate in
 * any string or key, naming the field (PROTOCOL.md "Decoding rules"): one rule for every JSON
 * transport, before the model sees the value. (HTTP: Fastify's parser already refused prototype keys.)
 */
export function checkParsedJson(model: Model, json: unknown): void {
  refuse(model, json, scan(json, MAX_JSON_DEPTH, true, false))
}

/**
 * Payload bytes → request value, in any format. Zero bytes are the empty model (`fromJSON({})`) in
 * every format: the binary version byte is only written when there is a model to read.
 */
export function decodePayload(format: WireFormat, model: Model, bytes: Uint8Array): unknown {
  if (bytes.length === 0) return model.fromJSON({})
  return format.decode(model, bytes)
}

/**
 * An endpoint's request bytes → request value: the one rule for every transport (HTTP, frames, client
 * stream items, TCP's inject bridge) that a model without a binary form takes no request in a binary
 * format (415), then `decodePayload`.
 */
export function decodeRequest(
  endpoint: string,
  format: WireFormat,
  model: Model,
  bytes: Uint8Array,
  /** The response model of a call answered in `format` (a frame's): no form in it is 406, after the 415. */
  response?: Model,
): unknown {
  if (bytes.length > 0 && format.name !== 'json' && !model.decode) {
    throw new UnsupportedMediaTypeException(`Endpoint ${endpoint} has no ${format.name} request format`)
  }
  if (response !== undefined) refuseAnswerFormat(endpoint, response, format)
  return decodePayload(format, model, bytes)
}

/**
 * A call that asks for its answer in a format the response model has no form in (a binary frame; HTTP
 * `Accept` naming only binary) is 406 before the handler runs, never answered in JSON instead. The kind
 * is UnsupportedMediaTypeException; the status keeps its precise meaning (PROTOCOL.md "Errors").
 */
export function refuseAnswerFormat(endpoint: string, response: Model, format: WireFormat): void {
  if (format.name === 'json' || response.encode !== undefined) return
  const error = new UnsupportedMediaTypeException(
    `Endpoint ${endpoint} has no ${format.name} response format`,
  )
  error.statusCode = 406
  throw error
}

export const jsonFormat: WireFormat = {
  name: 'json',
  contentType: JSON_CONTENT_TYPE,
  decode(model, bytes) {
    // No bytes, or `{}` (what clients send for a call without parameters): the empty model, unparsed.
    if (bytes.length === 0 || (bytes.length === 2 && bytes[0] === 0x7b && bytes[1] === 0x7d)) {
      return model.fromJSON({})
    }
    const text = decodeUtf8(bytes)
    const json = parseText(text)
    // One bounded walk: depth always, prototype keys and lone surrogates when the text could hold them.
    refuse(model, json, scan(json, MAX_JSON_DEPTH, text.includes('\\u'), riskyKeys(text)))
    return model.fromJSON(json)
  },
  encode(model, value) {
    return model.stringify ? model.stringify(value) : JSON.stringify(model.toJSON(value))
  },
}

/** Known formats, looked up by name (frames) or by media type (HTTP). */
export class FormatRegistry {
  private readonly byName = new Map<string, WireFormat>()
  private readonly byType = new Map<string, WireFormat>()

  constructor() {
    this.add(jsonFormat)
  }

  add(format: WireFormat): void {
    if (this.byName.has(format.name)) {
      throw new Error(`@trivium/core: a wire format named "${format.name}" is already registered`)
    }
    this.byName.set(format.name, format)
    this.byType.set(format.contentType.toLowerCase(), format)
  }

  /** Gives the models core built from schemas the binary forms the registered formats derive. */
  deriveForms(models: readonly Model[]): void {
    for (const format of this.byName.values()) {
      if (format.derive === undefined) continue
      for (const model of models) {
        if (model.decode !== undefined || !isSchemaModel(model)) continue
        const derived = format.derive(model)
        if (derived !== undefined) Object.assign(model, derived)
      }
    }
  }

  get(name: string): WireFormat | undefined {
    return this.byName.get(name)
  }

  contentTypes(): string[] {
    return [...this.byType.keys()]
  }

  /** The formats' names, in the order they were added (`json` first). */
  names(): string[] {
    return [...this.byName.keys()]
  }

  /** The format of a Content-Type header value (parameters such as charset are ignored). */
  forContentType(header: string | undefined): WireFormat | undefined {
    if (!header) return undefined
    const semi = header.indexOf(';')
    const type = (semi === -1 ? header : header.slice(0, semi)).trim().toLowerCase()
    return this.byType.get(type)
  }

  /**
   * Response format for HTTP: a registered type named in Accept wins (binary is preferred when the
   * client lists it); with no usable Accept, answer in the request's format; JSON is the fallback.
   */
  /** The format an Accept header demands: binary when it names binary and no JSON (`*\/*`, `application/*`). */
  demandedBy(accept: string | undefined): WireFormat | undefined {
    if (accept === undefined || !accept.includes(BINARY_CONTENT_TYPE)) return undefined
    if (accept.includes(JSON_CONTENT_TYPE) || accept.includes('*/*') || accept.includes('application/*')) {
      return undefined
    }
    return this.byType.get(BINARY_CONTENT_TYPE)
  }

  forAccept(accept: string | undefined, requestFormat: WireFormat | undefined): WireFormat {
    if (accept && accept !== '*/*') {
      const binary = this.byType.get(BINARY_CONTENT_TYPE)
      if (binary && accept.includes(BINARY_CONTENT_TYPE)) return binary
      if (accept.includes(JSON_CONTENT_TYPE) || accept.includes('*/*') || accept.includes('application/*')) {
        return jsonFormat
      }
    }
    return requestFormat ?? jsonFormat
  }
}

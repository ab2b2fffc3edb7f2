// A real Trivium server (Fastify + @trivium/core) with the endpoints the client tests use, and the
// client-side endpoint table that matches it.

import type { EndpointSpec } from '@trivium/client'
import {
  ForbiddenException,
  jsonSchemaModel,
  type Model,
  NotFoundException,
  RateLimitExceededException,
  TokenExpiredException,
  triviumCorePlugin,
  UnauthorizedException,
  ValidationException,
} from '@trivium/core'
import { BINARY_CONTENT_TYPE } from '@trivium/core/internal'
import { triviumTcpPlugin } from '@trivium/tcp'
import { triviumWebSocketPlugin } from '@trivium/websocket'
import Fastify, { type FastifyInstance } from 'fastify'

/** A stream-of-requests spec (`POST /<name>`) whose models pass JSON through: the server's models check. */
export function requestStreamSpec(name: string, streaming: boolean): EndpointSpec {
  const json = { fromJSON: (v: unknown) => v, toJSON: (v: unknown) => v }
  return {
    name,
    method: 'POST',
    url: `/${name}`,
    request: json,
    response: json,
    streaming,
    requestStream: true,
  }
}

const MAGIC = 0xb1
/** A model with a binary form: a marker byte then the JSON text (stands in for @trivium/codec). */
export function binModel<T>(name: string, schema: Record<string, unknown>): Model<T> {
  const base = jsonSchemaModel<T>(name, schema)
  return {
    ...base,
    encode(value: T): Uint8Array {
      const json = new TextEncoder().encode(JSON.stringify(value))
      const out = new Uint8Array(json.length + 1)
      out[0] = MAGIC
      out.set(json, 1)
      return out
    },
    decode(bytes: Uint8Array): T {
      if (bytes[0] !== MAGIC) throw new ValidationException(`Invalid ${name}: not binary`)
      return base.fromJSON(JSON.parse(new TextDecoder().decode(bytes.subarray(1))))
    },
  }
}

export const binaryFormat = {
  name: 'binary',
  contentType: BINARY_CONTENT_TYPE,
  decode: (model: Model, bytes: Uint8Array) => {
    if (!model.decode) throw new ValidationException('no binary form')
    return model.decode(bytes)
  },
  encode: (model: Model, value: unknown) => {
    if (!model.encode) throw new ValidationException('no binary form')
    return model.encode(value)
  },
}

export interface Echo {
  text: string
}
export interface Task {
  id: number
  list: string
  title: string
  verbose?: boolean
}
export interface Count {
  n: number
}

const echoModel = binModel<Echo>('Echo', {
  type: 'object',
  properties: { text: { type: 'string' } },
  required: ['text'],
})
const taskModel = binModel<Task>('Task', {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    list: { type: 'string' },
    title: { type: 'string' },
    verbose: { type: 'boolean' },
  },
})
const getTaskModel = jsonSchemaModel<{ id: number; verbose?: boolean }>('GetTask', {
  type: 'object',
  properties: { id: { type: 'integer' }, verbose: { type: 'boolean' } },
  required: ['id'],
})
const createTaskModel = binModel<{ list: string; title: string }>('CreateTask', {
  type: 'object',
  properties: { list: { type: 'string' }, title: { type: 'string', minLength: 1 } },
  required: ['list', 'title'],
})
const failModel = jsonSchemaModel<{ kind: string }>('Fail', {
  type: 'object',
  properties: { kind: { type: 'string' } },
  required: ['kind'],
})
const countRequest = jsonSchemaModel<{ from: number; to: number; failAt?: number }>('CountRequest', {
  type: 'object',
  properties: { from: { type: 'integer' }, to: { type: 'integer' }, failAt: { type: 'integer' } },
  required: ['from', 'to'],
})
const countModel = binModel<Count>('Count', { type: 'object', properties: { n: { type: 'integer' } } })
const anyJson = jsonSchemaModel<Record<string, unknown>>('Any', { type: 'object' })

export const endpoints = {
  echo: {
    name: 'echo',
    method: 'POST',
    url: '/echo',
    request: echoModel,
    response: echoModel,
    streaming: false,
  },
  getTask: {
    name: 'tasks.get',
    method: 'GET',
    url: '/tasks/:id',
    request: getTaskModel,
    response: taskModel,
    streaming: false,
  },
  createTask: {
    name: 'tasks.create',
    method: 'POST',
    url: '/lists/:list/tasks',
    status: 201,
    request: createTaskModel,
    response: taskModel,
    streaming: false,
  },
  fail: {
    name: 'fail',
    method: 'GET',
    url: '/fail/:kind',
    request: failModel,
    response: anyJson,
    streaming: false,
  },
  slow: { name: 'slow', method: 'GET', url: '/slow', request: anyJson, response: anyJson, streaming: false },
  secure: {
    name: 'secure',
    method: 'GET',
    url: '/secure',
    request: anyJson,
    response: anyJson,
    streaming: false,
  },
  count: {
    name: 'count',
    method: 'GET',
    url: '/count',
    request: countRequest,
    response: countModel,
    streaming: true,
    resume: (req: { from: number; to: number }, last: Count) => ({ ...req, from: last.n + 1 }),
  },
} satisfies Record<string, EndpointSpec>

export interface Probe {
  /** Resolves when the `count` generator that started at `from` ran its finally (stopped on the server). */
  streamStopped(from: number): Promise<void>
  /** Resolves when the next `slow` call sees its signal abort. */
  nextSlowAbort(): Promise<void>
  /** Resolves when the next `slow` call's handler starts (the REQUEST reached the server). */
  nextSlowStart(): Promise<void>
  tokensSeen: string[]
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

export interface ServerOptions {
  /** Also serve WebSocket (path /ws) and TCP. */
  frames?: boolean
  /** Fixed ports (to restart a server where it was). */
  port?: number
  tcpPort?: number
  shutdownGraceMs?: number
}

export interface TestServer {
  app: FastifyInstance
  url: string
  port: number
  tcpPort: number
  wsUrl: string
  probe: Probe
}

export async function startServer(options: ServerOptions = {}): Promise<TestServer> {
  // forceCloseConnections: a socket whose SSE client went away stays open until keepAliveTimeout otherwise
  const app = Fastify({ forceCloseConnections: true })
  await app.register(triviumCorePlugin)
  app.trivium.addFormat(binaryFormat)
  const stops = new Map<number, { promise: Promise<void>; resolve: () => void }>()
  const stopOf = (from: number) => {
    let d = stops.get(from)
    if (!d) {
      d = deferred()
      stops.set(from, d)
    }
    return d
  }
  const slowWaiters: Array<() => void> = []
  const slowStarters: Array<() => void> = []
  const probe: Probe = {
    streamStopped: (from) => stopOf(from).promise,
    nextSlowAbort: () => new Promise<void>((resolve) => slowWaiters.push(resolve)),
    nextSlowStart: () => new Promise<void>((resolve) => slowStarters.push(resolve)),
    tokensSeen: [],
  }
  const t = app.trivium
  t.endpoint('echo', endpoints.echo, (req) => ({ text: req.text }))
  t.endpoint('tasks.get', endpoints.getTask, (req) => ({
    id: req.id,
    list: 'inbox',
    title: `task ${req.id}`,
    verbose: req.verbose,
  }))
  t.endpoint('tasks.create', endpoints.createTask, (req) => ({ id: 7, list: req.list, title: req.title }))
  t.endpoint('fail', endpoints.fail, (req) => {
    switch (req.kind) {
      case 'unauthorized':
        throw new UnauthorizedException('Authentication required')
      case 'expired':
        throw new TokenExpiredException('Token has expired')
      case 'forbidden':
        throw new ForbiddenException('Insufficient permissions. Required: tasks:write')
      case 'validation':
        throw new ValidationException('Invalid Task: title must NOT have fewer than 1 characters', [
          { field: 'title', message: 'must NOT have fewer than 1 characters' },
        ])
      case 'ratelimit':
        throw new RateLimitExceededException(12)
      case 'notfound':
        throw new NotFoundException('Task 9 not found')
      default:
        throw new Error('boom')
    }
  })
  t.endpoint('slow', endpoints.slow, async (_req, call) => {
    const signal = call.signal
    for (const w of slowStarters.splice(0)) w()
    await new Promise<void>((resolve) => {
      const aborted = () => {
        clearTimeout(timer)
        for (const w of slowWaiters.splice(0)) w()
        resolve()
      }
      const timer = setTimeout(resolve, 10_000)
      // Already aborted when read: on a loaded machine the call's deadline (the client's 50 ms) can pass
      // before the handler runs, and an aborted signal fires no further 'abort' event.
      if (signal.aborted) aborted()
      else signal.addEventListener('abort', aborted)
    })
    return { done: true }
  })
  t.endpoint('secure', endpoints.secure, (_req, call) => {
    const header = String(call.headers.authorization ?? '')
    const token =
      header.replace(/^Bearer /, '') ||
      String(call.query.token ?? '') ||
      String(call.metadata.auth_token ?? '')
    probe.tokensSeen.push(token)
    if (!token) throw new UnauthorizedException('Authentication required')
    if (token === 'old') throw new TokenExpiredException('Token has expired')
    if (token !== 'fresh') throw new UnauthorizedException('Invalid token: bad signature')
    return { user: 'alice' }
  })
  t.stream('count', endpoints.count, async function* (req, call) {
    try {
      for (let n = req.from; n <= req.to; n++) {
        if (req.failAt === n) throw new ForbiddenException('Insufficient roles. Required: admin')
        yield { n }
        // a little pause so that a cancelled stream is still running when the client goes away
        await new Promise((r) => setTimeout(r, 5))
        if (call.signal.aborted) return
      }
    } finally {
      stopOf(req.from).resolve()
    }
  })
  let tcpPort = 0
  if (options.frames) {
    await app.register(triviumWebSocketPlugin, { shutdownGraceMs: options.shutdownGraceMs ?? 50 })
    await app.register(triviumTcpPlugin, {
      port: options.tcpPort ?? 0,
      shutdownGraceMs: options.shutdownGraceMs ?? 50,
    })
  }
  const address = await app.listen({ port: options.port ?? 0, host: '127.0.0.1' })
  const port = Number(new URL(address).port)
  if (options.frames) tcpPort = app.triviumTcp.address()?.port ?? 0
  return { app, url: address, port, tcpPort, wsUrl: `ws://127.0.0.1:${port}/ws`, probe }
}

// Shared by the tests: a small set of endpoints and a structural check of a document.
import { Validator } from '@seriousme/openapi-schema-validator'
import trivium, { emptyModel, jsonSchemaModel, type Model } from '@trivium/core'
import { enforcesSettings } from '@trivium/core/internal'
import Fastify, { type FastifyInstance } from 'fastify'

export const Task = jsonSchemaModel<{ id: number; title: string; done: boolean }>('Task', {
  type: 'object',
  properties: { id: { type: 'integer' }, title: { type: 'string' }, done: { type: 'boolean' } },
  required: ['id', 'title', 'done'],
})
export const CreateTask = jsonSchemaModel<{ title: string }>('CreateTask', {
  type: 'object',
  properties: { title: { type: 'string', minLength: 1 } },
  required: ['title'],
})
export const ListTasks = jsonSchemaModel('ListTasks', {
  type: 'object',
  properties: {
    done: { type: 'boolean' },
    limit: { type: 'integer', minimum: 1 },
    tag: { type: 'array', items: { type: 'string' } },
    filter: { type: 'object', properties: { q: { type: 'string' } } },
  },
  required: ['limit'],
})
export const TaskId = jsonSchemaModel('TaskId', {
  type: 'object',
  properties: { id: { type: 'integer' } },
  required: ['id'],
})
export const UpdateTask = jsonSchemaModel('UpdateTask', {
  type: 'object',
  properties: { id: { type: 'integer' }, title: { type: 'string' }, done: { type: 'boolean' } },
  required: ['id', 'title'],
})

/** A model with a binary form, the way @trivium/codec's generated classes have one. */
export function withBinary<T>(model: Model<T>): Model<T> {
  return { ...model, encode: () => new Uint8Array(0), decode: () => ({}) as T }
}

/** A self-contained schema as @trivium/codec's generator emits it: `definitions`, `#/definitions/X`, `#`. */
export const Project = jsonSchemaModel('Project', {
  title: 'Project',
  type: 'object',
  properties: {
    name: { type: 'string' },
    owner: { $ref: '#/definitions/User' },
    tasks: { type: 'array', items: { $ref: '#/definitions/Task' } },
    parent: { anyOf: [{ $ref: '#/definitions/Project' }, { type: 'null' }] },
  },
  required: ['name', 'owner', 'tasks'],
  definitions: {
    Project: { $ref: '#' },
    Task: {
      title: 'Task',
      type: 'object',
      properties: { id: { type: 'integer' }, title: { type: 'string' }, done: { type: 'boolean' } },
      required: ['id', 'title', 'done'],
    },
    User: {
      title: 'User',
      type: 'object',
      properties: { id: { type: 'integer' }, manager: { $ref: '#/definitions/User' } },
      required: ['id'],
    },
  },
})

/**
 * The document describes rules; enforcing them is the other plugins' job (tested there). Without an
 * enforcer core refuses to start with them, so this stand-in declares them enforced.
 */
export function describeRulesOnly(fastify: FastifyInstance): void {
  fastify.trivium.use(
    enforcesSettings(['auth', 'permissions', 'roles', 'rateLimit', 'idempotencyKey'], (_call, next) =>
      next(),
    ),
    { name: 'rules-described-here' },
  )
}

export async function tasksApp(
  register?: (fastify: FastifyInstance) => PromiseLike<unknown>,
  models: { create?: Model } = {},
): Promise<FastifyInstance> {
  const fastify = Fastify()
  await fastify.register(trivium)
  describeRulesOnly(fastify)
  if (register) await register(fastify)
  const t = fastify.trivium
  t.endpoint(
    'tasks.create',
    {
      method: 'POST',
      url: '/tasks',
      request: models.create ?? CreateTask,
      response: Task,
      status: 201,
      summary: 'Create a task',
      permissions: ['tasks:write'],
      rateLimit: { requests: 10, windowMs: 60_000 },
    } as any,
    () => ({ id: 1, title: 'x', done: false }),
  )
  t.endpoint(
    'tasks.list',
    { method: 'GET', url: '/tasks', request: ListTasks, response: Task, auth: 'optional' } as any,
    () => [],
  )
  t.endpoint('tasks.get', { method: 'GET', url: '/tasks/:id', request: TaskId, response: Task }, () => ({}))
  t.endpoint(
    'tasks.update',
    { method: 'PUT', url: '/tasks/:id', request: UpdateTask, response: Task, roles: ['admin'] } as any,
    () => ({}),
  )
  t.endpoint(
    'tasks.delete',
    { method: 'DELETE', url: '/tasks/:id', request: TaskId, response: emptyModel, rateLimit: false } as any,
    () => ({}),
  )
  t.stream(
    'tasks.watch',
    { method: 'GET', url: '/tasks/watch', request: emptyModel, response: Task },
    async function* () {},
  )
  t.endpoint('health', { method: 'GET', url: '/health', auth: 'public' } as any, () => ({ ok: true }))
  t.endpoint(
    'projects.get',
    { method: 'GET', url: '/projects/:name', request: emptyModel, response: Project },
    () => ({}),
  )
  return fastify
}

function resolvePointer(document: unknown, ref: string): unknown {
  if (!ref.startsWith('#')) return undefined
  const tokens = ref === '#' ? [] : ref.slice(2).split('/')
  let node: unknown = document
  for (const raw of tokens) {
    const token = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~')
    if (typeof node !== 'object' || node === null || !(token in node)) return undefined
    node = (node as Record<string, unknown>)[token]
  }
  return node
}

/** Every `$ref` in the document, with where it is. */
export function refsOf(value: unknown, at = '#', out: { at: string; ref: string }[] = []) {
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) refsOf(v, `${at}/${i}`, out)
  } else if (typeof value === 'object' && value !== null) {
    for (const [key, v] of Object.entries(value)) {
      if (key === '$ref' && typeof v === 'string') out.push({ at, ref: v })
      else refsOf(v, `${at}/${key}`, out)
    }
  }
  return out
}

/** Problems of a document: OpenAPI 3.1 schema errors and refs that resolve to nothing. */
export async function problemsOf(document: unknown): Promise<string[]> {
  const validator = new Validator()
  const result = await validator.validate(structuredClone(document) as any)
  const problems: string[] = []
  if (!result.valid) problems.push(`schema: ${JSON.stringify(result.errors)}`)
  for (const { at, ref } of refsOf(document)) {
    if (resolvePointer(document, ref) === undefined) problems.push(`${at}: unresolved ${ref}`)
  }
  return problems
}

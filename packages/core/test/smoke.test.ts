import Fastify from 'fastify'
import t from 'tap'
import trivium, { jsonSchemaModel } from '@trivium/core'

t.test('smoke', async (t) => {
  const app = Fastify()
  await app.register(trivium)
  const Create = jsonSchemaModel<{ title: string }>('CreateTask', {
    type: 'object',
    properties: { title: { type: 'string' } },
    required: ['title'],
  })
  app.trivium.endpoint('tasks.create', { method: 'POST', url: '/tasks', request: Create, status: 201 }, (req) => ({ id: 1, ...req }))
  app.trivium.endpoint('tasks.get', { method: 'GET', url: '/tasks/:id', request: jsonSchemaModel('Get', { type: 'object', properties: { id: { type: 'integer' } } }) }, (req) => req)
  const r = await app.inject({ method: 'POST', url: '/tasks', payload: { title: 'x' } })
  t.equal(r.statusCode, 201)
  t.same(r.json(), { id: 1, title: 'x' })
  const g = await app.inject({ method: 'GET', url: '/tasks/5' })
  t.same(g.json(), { id: 5 })
  const bad = await app.inject({ method: 'POST', url: '/tasks', payload: { title: 1 } })
  t.equal(bad.statusCode, 400)
  t.comment(bad.body)
  const nf = await app.inject({ method: 'GET', url: '/nope' })
  t.comment(nf.statusCode, nf.body)
  const tp = await app.inject({ method: 'POST', url: '/tasks', payload: 'hello', headers: { 'content-type': 'text/plain' } })
  t.comment(tp.statusCode, tp.body)
})

// One rule for a field's refusal (issue 33): `Invalid <request model>: <field> <message>`, whether the
// schema's check or the service's own rule (a blank title) refuses it.
import t from 'tap'
import { registerAndLogin, startDemo } from './helpers.js'

t.test('a task title refused by the schema and by the service: one message prefix', async (t) => {
  const { app } = await startDemo(t)
  const { tokens } = await registerAndLogin(app, 'fieldrules')
  const headers = { authorization: `Bearer ${tokens.accessToken}` }
  const call = async (method: 'POST' | 'PUT', url: string, payload: object) => {
    const reply = await app.inject({ method, url, headers, payload })
    t.equal(reply.statusCode, 400)
    const { message, details } = reply.json()
    return { message, details }
  }
  t.same(await call('POST', '/tasks', {}), {
    message: 'Invalid CreateTask: title is required',
    details: [{ field: 'title', message: 'is required' }],
  })
  t.same(await call('POST', '/tasks', { title: '   ' }), {
    message: 'Invalid CreateTask: title must not be empty',
    details: [{ field: 'title', message: 'must not be empty' }],
  })
  const created = await app.inject({ method: 'POST', url: '/tasks', headers, payload: { title: 'ok' } })
  t.equal(created.statusCode, 201)
  t.same(await call('PUT', `/tasks/${created.json().id}`, { title: ' ' }), {
    message: 'Invalid UpdateTask: title must not be empty',
    details: [{ field: 'title', message: 'must not be empty' }],
  })
})

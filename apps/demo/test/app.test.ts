import t from 'tap'
import { buildApp } from '../dist/app.js'

t.test('the demo answers health and echo', async (t) => {
  const app = await buildApp({ host: '127.0.0.1', port: 0, logLevel: 'silent' })
  t.teardown(() => app.close())
  const health = await app.inject('/health')
  t.equal(health.statusCode, 200)
  t.equal(health.json().status, 'ok')
  const echo = await app.inject({ method: 'POST', url: '/echo', payload: { message: 'hi' } })
  t.same(echo.json(), { message: 'hi' })
})

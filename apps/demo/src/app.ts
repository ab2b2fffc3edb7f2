// Builds the demo application: every Trivium plugin registered on one Fastify instance.

import trivium, { jsonSchemaModel } from '@trivium/core'
import Fastify, { type FastifyInstance } from 'fastify'
import type { DemoConfig } from './config.js'

const Echo = jsonSchemaModel<{ message: string }>('Echo', {
  type: 'object',
  properties: { message: { type: 'string', maxLength: 1000 } },
  required: ['message'],
})

export async function buildApp(config: DemoConfig): Promise<FastifyInstance> {
  const app = Fastify({ logger: { level: config.logLevel } })
  await app.register(trivium)

  app.trivium.endpoint('health', { method: 'GET', url: '/health', summary: 'Liveness' }, () => ({
    status: 'ok',
    uptimeSeconds: Math.round(process.uptime()),
  }))
  app.trivium.endpoint('echo', { method: 'POST', url: '/echo', request: Echo, response: Echo }, (req) => req)
  return app
}

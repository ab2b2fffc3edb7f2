// health: liveness plus the version and instance that answered.
import type { EndpointHandlers } from '../generated/server.js'
import type { HandlerContext } from './context.js'

export const VERSION = '0.1.0'

export function healthHandlers({ config }: HandlerContext): Pick<EndpointHandlers, 'health'> {
  return {
    health: () => ({
      status: 'ok',
      uptimeSeconds: Math.round(process.uptime()),
      version: `${VERSION} (${config.instanceName})`,
    }),
  }
}

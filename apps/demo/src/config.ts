// Configuration from the environment, with zero-setup defaults.
export interface DemoConfig {
  host: string
  port: number
  logLevel: string
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): DemoConfig {
  const port = Number(env.PORT ?? 3000)
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`PORT must be a port number, got ${env.PORT}`)
  return {
    host: env.HOST ?? '127.0.0.1',
    port,
    logLevel: env.LOG_LEVEL ?? 'info',
  }
}

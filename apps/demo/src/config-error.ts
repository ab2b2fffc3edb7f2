/** Thrown for a bad setting; server.ts prints the message alone (no stack trace) and exits 1. */
export class ConfigError extends Error {
  override name = 'ConfigError'
}

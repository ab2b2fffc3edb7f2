// Where the demo's log lines go (issue 33): readable lines (pino-pretty) at a terminal outside production,
// JSON lines otherwise (files, pipes, log collectors). While the server starts, error lines are held back:
// a start that fails prints its one line (the setting and the fix, server.ts) without the stack traces of
// the errors that led to it; a start that succeeds writes them then.
import { Writable } from 'node:stream'
import pinoPretty from 'pino-pretty'

const ERROR = 50

export interface LogOutput {
  stream: NodeJS.WritableStream
  /** The start succeeded: the held lines are written, later ones pass straight through. */
  started(): void
}

export function logOutput(
  out: NodeJS.WritableStream & { isTTY?: boolean } = process.stdout,
  nodeEnv = process.env.NODE_ENV,
): LogOutput {
  const target: NodeJS.WritableStream =
    out.isTTY && nodeEnv !== 'production'
      ? pinoPretty({
          destination: out,
          colorize: true,
          translateTime: 'SYS:HH:MM:ss.l',
          ignore: 'pid,hostname',
        })
      : out
  let held: string[] | undefined = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const line = chunk.toString()
      if (held && (JSON.parse(line) as { level?: number }).level! >= ERROR) held.push(line)
      else target.write(line)
      done()
    },
  })
  return {
    stream,
    started() {
      for (const line of held ?? []) target.write(line)
      held = undefined
    },
  }
}

// `tsc -p <project>` for a test that type-checks several projects: one child process
// (scripts/test/tsc-projects.mjs) checks them in turn, in the order asked, and answers each with what tsc would
// print ('' when clean) and its exit status. It loads TypeScript once (its code stays compiled by V8 for the next
// project) and parses a file that two projects read alike once; every project is still checked in full under its
// own options. Measured on packages/adoption/test/adoption.test.ts (five projects): bench/README.md
// "The test suite's CPU".
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

const script = join(import.meta.dirname, 'tsc-projects.mjs')

export interface TscResult {
  stdout: string
  status: number
}

export interface TypeChecker {
  /** What `tsc -p <project>` run in `cwd` prints ('' when there is no error) and its exit status. */
  check(cwd: string, project: string): Promise<TscResult>
  /** Ends the child process once it has answered (a test calls it in its teardown). */
  close(): void
}

/** Starts the checker; `env` is the child's (a test leaves out NODE_OPTIONS and NODE_V8_COVERAGE). */
export function typeChecker(env: NodeJS.ProcessEnv): TypeChecker {
  const child = spawn(process.execPath, [script], { env, stdio: ['pipe', 'pipe', 'inherit'] })
  const waiting: { resolve: (result: TscResult) => void; reject: (err: Error) => void }[] = []
  const fail = (err: Error) => {
    for (const w of waiting.splice(0)) w.reject(err)
  }
  createInterface({ input: child.stdout }).on('line', (line) => {
    const answer = JSON.parse(line) as Partial<TscResult> & { error?: string }
    const w = waiting.shift()
    if (answer.stdout !== undefined && answer.status !== undefined)
      w?.resolve({ stdout: answer.stdout, status: answer.status })
    else w?.reject(new Error(`tsc-projects: ${answer.error}`))
  })
  child.on('error', fail)
  child.on('close', (code, signal) => fail(new Error(`tsc-projects exited with ${signal ?? code}`)))
  return {
    check(cwd, project) {
      return new Promise((resolve, reject) => {
        waiting.push({ resolve, reject })
        child.stdin.write(`${JSON.stringify({ cwd, project })}\n`)
      })
    },
    close() {
      child.stdin.end()
    },
  }
}

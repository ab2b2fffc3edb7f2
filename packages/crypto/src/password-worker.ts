// Runs inside a worker thread: one bcrypt job per message, synchronously (the thread has nothing else to do).
import { parentPort } from 'node:worker_threads'
import bcrypt from 'bcryptjs'

export interface PasswordJob {
  id: number
  op: 'hash' | 'verify'
  password: string
  hash?: string
  cost?: number
}

export interface PasswordReply {
  id: number
  ok: boolean
  result?: string | boolean
}

const port = parentPort
if (port) {
  port.on('message', (job: PasswordJob) => {
    let reply: PasswordReply
    try {
      const result =
        job.op === 'hash'
          ? bcrypt.hashSync(job.password, job.cost)
          : bcrypt.compareSync(job.password, job.hash ?? '')
      reply = { id: job.id, ok: true, result }
    } catch {
      // No message is sent back: it could echo input. A hash that cannot be read does not match.
      reply = job.op === 'verify' ? { id: job.id, ok: true, result: false } : { id: job.id, ok: false }
    }
    port.postMessage(reply)
  })
}

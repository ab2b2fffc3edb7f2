// One random id per process, written into every envelope (`from`) so receivers can tell their own
// messages from other instances' messages and logs can say who sent what.
import { randomUUID } from 'node:crypto'

const ID = randomUUID()

/** A random id for this process (a UUID), the same for every bus and channel in it. */
export function instanceId(): string {
  return ID
}

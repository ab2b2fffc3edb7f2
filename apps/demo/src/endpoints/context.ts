// What the endpoint handlers need, built once in app.ts.
import type { AuthFlows, AuthService } from '@trivium/auth'
import type { TriviumCall } from '@trivium/core'
import type { RbacService } from '@trivium/rbac'
import type { DemoConfig } from '../config.js'
import type { RoleName } from '../rights.js'
import type { TaskEventBus } from '../tasks/events.js'
import type { OutboxRelay } from '../tasks/outbox.js'
import type { TaskRepository } from '../tasks/repository.js'

export interface HandlerContext {
  config: DemoConfig
  auth: AuthService
  flows: AuthFlows
  rbac: RbacService
  tasks: TaskRepository
  events: TaskEventBus
  /** Relays the outbox (task events, rights changes): `kick()` after adding a row. */
  outbox: OutboxRelay
  roleIds: Record<RoleName, number>
  /** Whether a user with this id is registered. */
  userExists: (userId: number) => Promise<boolean>
}

/** The authenticated user of a call (the auth middleware has run; protected endpoints only). */
export function userOf(call: TriviumCall<any>): { id: number; roles: string[] } {
  const identity = call.identity
  return { id: Number(identity?.userId), roles: [...(identity?.roles ?? [])] }
}

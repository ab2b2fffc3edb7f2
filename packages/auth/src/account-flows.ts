// Account flows: register (with the transactional onRegistered hooks) and me.
import { type CallTarget, type TriviumCall, ValidationException } from '@trivium/core'
import { hashPassword } from '@trivium/crypto'
import { validateEmail, validatePassword, validateUsername } from '@trivium/validation'
import type { FlowsContext, RegisteredHook, RegisterOptions } from './flows-context.js'
import { DuplicateUserError, type NewUser, type UserRecord } from './users.js'

export const USERNAME_TAKEN = 'Username is already taken'
export const EMAIL_TAKEN = 'Email is already registered'

function publicUser(user: UserRecord) {
  return { id: user.id, username: user.username, email: user.email, createdAt: user.createdAt.toISOString() }
}

export function createAccountFlows(ctx: FlowsContext) {
  const { users, onRegistered, minLength, currentUser } = ctx

  /**
   * Creates the user; with hooks, user row and hooks' writes commit together or not at all. `call`
   * stopped before the commit: nothing is written (the transaction rolls back).
   */
  async function createUser(
    newUser: NewUser,
    extra: RegisteredHook | undefined,
    call: RegisterOptions['call'],
  ): Promise<UserRecord> {
    const hooks = [onRegistered, extra].filter((h): h is RegisteredHook => h !== undefined)
    call?.throwIfAborted()
    if (hooks.length === 0) return users.create(newUser)
    if (typeof users.transaction !== 'function') {
      throw new TypeError(
        '@trivium/auth: onRegistered needs a user store with transaction() (e.g. SqlUserStore)',
      )
    }
    return users.transaction(async (store, tx) => {
      const user = await store.create(newUser)
      for (const hook of hooks) await hook(user, tx)
      call?.throwIfAborted() // the last step before COMMIT
      return user
    })
  }

  return {
    register: async (
      req: { username: string; email: string; password: string },
      registerOptions: RegisterOptions = {},
    ) => {
      const username = validateUsername(req.username)
      const email = validateEmail(req.email)
      const password = validatePassword(req.password, { minLength })
      const extra = registerOptions.onRegistered
      if (extra !== undefined && typeof extra !== 'function')
        throw new TypeError('@trivium/auth: register onRegistered must be a function')
      // Hashed before the transaction: bcrypt must not hold a pooled connection.
      const passwordHash = await hashPassword(password)
      try {
        return publicUser(await createUser({ username, email, passwordHash }, extra, registerOptions.call))
      } catch (err) {
        if (err instanceof DuplicateUserError) {
          const message = err.field === 'email' ? EMAIL_TAKEN : USERNAME_TAKEN
          throw new ValidationException(message, [{ field: err.field, message }])
        }
        throw err
      }
    },
    me: async (_req: unknown, call: TriviumCall<unknown, CallTarget>) => {
      const user = await currentUser(call)
      return {
        ...publicUser(user),
        roles: call.identity?.roles ?? [],
        permissions: call.identity?.permissions ?? [],
        totpEnabled: user.totpEnabled,
      }
    },
  }
}

// auth.* endpoints: the credential flows of @trivium/auth, served under the schema's models so they
// work in binary and JSON on every transport. New users get the `member` role, in the transaction that
// creates them: a failure leaves neither the user nor the role behind.
import { RbacService } from '@trivium/rbac'
import type { EndpointHandlers } from '../generated/server.js'
import { type HandlerContext, userOf } from './context.js'

type AuthHandlers = Pick<
  EndpointHandlers,
  | 'auth.register'
  | 'auth.login'
  | 'auth.refresh'
  | 'auth.logout'
  | 'auth.me'
  | 'auth.totp.enable'
  | 'auth.totp.confirm'
>

export function authHandlers({ flows, roleIds }: HandlerContext): AuthHandlers {
  return {
    'auth.register': async (req, call) => {
      const user = await flows.register(req, {
        // A registration whose deadline passed before its COMMIT leaves no user (PROTOCOL.md "Deadlines").
        call,
        onRegistered: (created, tx) => new RbacService(tx).assignRole(created.id, roleIds.member),
      })
      return { id: user.id, username: user.username, email: user.email, roles: ['member'] }
    },
    'auth.login': (req) =>
      flows.login({ username: req.username, password: req.password, totpCode: req.totp }),
    'auth.refresh': (req) => flows.refresh(req),
    'auth.logout': async (req, call) => {
      await flows.logout(req, call)
      return { ok: true }
    },
    'auth.me': async (req, call) => {
      const me = await flows.me(req, call)
      return { id: me.id, username: me.username, email: me.email, roles: userOf(call).roles }
    },
    'auth.totp.enable': async (req, call) => {
      const setup = await flows.totpEnable(req, call)
      return { secret: setup.secret, uri: setup.otpauthUrl }
    },
    'auth.totp.confirm': async (req, call) => {
      await flows.totpConfirm(req, call)
      return { ok: true }
    },
  }
}

// The credential flows registered as core endpoints (`/auth/*`), so they are served on every transport.
import { jsonSchemaModel, type Trivium } from '@trivium/core'
import { type AuthFlows, createAuthFlows, type FlowsOptions } from './flows.js'
import type { AuthService } from './service.js'

const str = { type: 'string', maxLength: 1024 }
const RegisterRequest = jsonSchemaModel<{ username: string; email: string; password: string }>(
  'RegisterRequest',
  {
    type: 'object',
    properties: { username: str, email: str, password: str },
    required: ['username', 'email', 'password'],
  },
)
const LoginRequest = jsonSchemaModel<{ username: string; password: string; totpCode?: string }>(
  'LoginRequest',
  {
    type: 'object',
    properties: { username: str, password: str, totpCode: str },
    required: ['username', 'password'],
  },
)
const RefreshRequest = jsonSchemaModel<{ refreshToken: string }>('RefreshRequest', {
  type: 'object',
  properties: { refreshToken: { type: 'string', maxLength: 8192 } },
  required: ['refreshToken'],
})
const LogoutRequest = jsonSchemaModel<{ refreshToken?: string }>('LogoutRequest', {
  type: 'object',
  properties: { refreshToken: { type: 'string', maxLength: 8192 } },
})
const CodeRequest = jsonSchemaModel<{ code: string }>('TotpCodeRequest', {
  type: 'object',
  properties: { code: { type: 'string', maxLength: 16 } },
  required: ['code'],
})

/** Registers the flows' endpoints on core. */
export function registerFlows(trivium: Trivium, auth: AuthService, options: FlowsOptions): AuthFlows {
  const flows = createAuthFlows(auth, options)
  const base = options.basePath ?? '/auth'
  trivium.endpoint(
    'auth.register',
    {
      method: 'POST',
      url: `${base}/register`,
      request: RegisterRequest,
      status: 201,
      auth: 'public',
      summary: 'Create a user',
    },
    (req) => flows.register(req as never),
  )

  trivium.endpoint(
    'auth.login',
    {
      method: 'POST',
      url: `${base}/login`,
      request: LoginRequest,
      auth: 'public',
      summary: 'Exchange credentials for tokens',
    },
    (req) => flows.login(req as never),
  )

  trivium.endpoint(
    'auth.refresh',
    {
      method: 'POST',
      url: `${base}/refresh`,
      request: RefreshRequest,
      auth: 'public',
      summary: 'Rotate a refresh token',
    },
    (req) => flows.refresh(req as never),
  )

  trivium.endpoint(
    'auth.logout',
    { method: 'POST', url: `${base}/logout`, request: LogoutRequest, summary: 'Revoke the presented tokens' },
    (req, call) => flows.logout(req as never, call),
  )

  trivium.endpoint(
    'auth.me',
    { method: 'GET', url: `${base}/me`, summary: 'The authenticated user' },
    (req, call) => flows.me(req as never, call),
  )

  trivium.endpoint(
    'auth.totp.enable',
    { method: 'POST', url: `${base}/totp/enable`, summary: 'Start TOTP setup: a new secret to confirm' },
    (req, call) => flows.totpEnable(req as never, call),
  )

  trivium.endpoint(
    'auth.totp.confirm',
    {
      method: 'POST',
      url: `${base}/totp/confirm`,
      request: CodeRequest,
      summary: 'Finish TOTP setup with a code',
    },
    (req, call) => flows.totpConfirm(req as never, call),
  )

  trivium.endpoint(
    'auth.totp.disable',
    {
      method: 'POST',
      url: `${base}/totp/disable`,
      request: CodeRequest,
      summary: 'Turn TOTP off (needs a current code)',
    },
    (req, call) => flows.totpDisable(req as never, call),
  )

  return flows
}

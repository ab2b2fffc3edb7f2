// The credential flows registered as core endpoints (`/auth/*`), so they are served on every transport.
import { type EndpointOptions, jsonSchemaModel, type Trivium, type TriviumCall } from '@trivium/core'
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

type Run = (flows: AuthFlows, req: never, call: TriviumCall<any>) => unknown

/** The `/auth/*` endpoints: name, route under the base path, model, auth mode and the flow they run. */
const FLOW_ENDPOINTS: ReadonlyArray<{ name: string; path: string; run: Run } & Omit<EndpointOptions, 'url'>> =
  [
    {
      name: 'auth.register',
      method: 'POST',
      path: '/register',
      request: RegisterRequest,
      status: 201,
      auth: 'public',
      summary: 'Create a user',
      run: (f, req, call) => f.register(req, { call }),
    },
    {
      name: 'auth.login',
      method: 'POST',
      path: '/login',
      request: LoginRequest,
      auth: 'public',
      summary: 'Exchange credentials for tokens',
      run: (f, req) => f.login(req),
    },
    {
      name: 'auth.refresh',
      method: 'POST',
      path: '/refresh',
      request: RefreshRequest,
      auth: 'public',
      summary: 'Rotate a refresh token',
      run: (f, req) => f.refresh(req),
    },
    {
      name: 'auth.logout',
      method: 'POST',
      path: '/logout',
      request: LogoutRequest,
      summary: 'Revoke the presented tokens',
      run: (f, req, call) => f.logout(req, call),
    },
    {
      name: 'auth.me',
      method: 'GET',
      path: '/me',
      summary: 'The authenticated user',
      run: (f, req, call) => f.me(req, call),
    },
    {
      name: 'auth.totp.enable',
      method: 'POST',
      path: '/totp/enable',
      summary: 'Start TOTP setup: a new secret to confirm',
      run: (f, req, call) => f.totpEnable(req, call),
    },
    {
      name: 'auth.totp.confirm',
      method: 'POST',
      path: '/totp/confirm',
      request: CodeRequest,
      summary: 'Finish TOTP setup with a code',
      run: (f, req, call) => f.totpConfirm(req, call),
    },
    {
      name: 'auth.totp.disable',
      method: 'POST',
      path: '/totp/disable',
      request: CodeRequest,
      summary: 'Turn TOTP off (needs a current code)',
      run: (f, req, call) => f.totpDisable(req, call),
    },
  ]

/** Registers the flows' endpoints on core. */
export function registerFlows(trivium: Trivium, auth: AuthService, options: FlowsOptions): AuthFlows {
  const flows = createAuthFlows(auth, options)
  const base = options.basePath ?? '/auth'
  for (const { name, path, run, ...endpoint } of FLOW_ENDPOINTS) {
    trivium.endpoint(name, { ...endpoint, url: `${base}${path}` }, (req, call) =>
      run(flows, req as never, call),
    )
  }
  return flows
}

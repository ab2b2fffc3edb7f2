// The credential flows registered as core endpoints (`/auth/*`), so they are served on every transport.
import {
  type CallTarget,
  type EndpointOptions,
  type JsonSchema,
  jsonSchemaModel,
  type Model,
  type Trivium,
  type TriviumCall,
} from '@trivium/core'
import { type AuthFlows, createAuthFlows, type FlowsOptions } from './flows.js'
import type { AuthService } from './service.js'

const str = { type: 'string', maxLength: 1024 }
const refreshToken = { type: 'string', maxLength: 8192 }
// The request models' JSON Schemas; each is compiled (ajv) when the flows are registered, not when the
// package is imported: an app that never registers them pays nothing for them (bench/README.md, "cold
// import").
const REQUEST_SCHEMAS = {
  RegisterRequest: {
    type: 'object',
    properties: { username: str, email: str, password: str },
    required: ['username', 'email', 'password'],
  },
  LoginRequest: {
    type: 'object',
    properties: { username: str, password: str, totpCode: str },
    required: ['username', 'password'],
  },
  RefreshRequest: { type: 'object', properties: { refreshToken }, required: ['refreshToken'] },
  LogoutRequest: { type: 'object', properties: { refreshToken } },
  TotpCodeRequest: {
    type: 'object',
    properties: { code: { type: 'string', maxLength: 16 } },
    required: ['code'],
  },
} satisfies Record<string, JsonSchema>
type RequestSchemaName = keyof typeof REQUEST_SCHEMAS

const models = new Map<string, Model<unknown>>()
/** The named request model, compiled once per process. */
function requestModel(name: RequestSchemaName): Model<unknown> {
  let model = models.get(name)
  if (model === undefined) {
    model = jsonSchemaModel(name, REQUEST_SCHEMAS[name])
    models.set(name, model)
  }
  return model
}

type Run = (flows: AuthFlows, req: never, call: TriviumCall<unknown, CallTarget>) => unknown

/** The `/auth/*` endpoints: name, route under the base path, model, auth mode and the flow they run. */
const FLOW_ENDPOINTS: ReadonlyArray<
  { name: string; path: string; run: Run; requestSchema?: RequestSchemaName } & Omit<
    EndpointOptions,
    'url' | 'request'
  >
> = [
  {
    name: 'auth.register',
    method: 'POST',
    path: '/register',
    requestSchema: 'RegisterRequest',
    status: 201,
    auth: 'public',
    summary: 'Create a user',
    run: (f, req, call) => f.register(req, { call }),
  },
  {
    name: 'auth.login',
    method: 'POST',
    path: '/login',
    requestSchema: 'LoginRequest',
    auth: 'public',
    summary: 'Exchange credentials for tokens',
    run: (f, req) => f.login(req),
  },
  {
    name: 'auth.refresh',
    method: 'POST',
    path: '/refresh',
    requestSchema: 'RefreshRequest',
    auth: 'public',
    summary: 'Rotate a refresh token',
    run: (f, req) => f.refresh(req),
  },
  {
    name: 'auth.logout',
    method: 'POST',
    path: '/logout',
    requestSchema: 'LogoutRequest',
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
    requestSchema: 'TotpCodeRequest',
    summary: 'Finish TOTP setup with a code',
    run: (f, req, call) => f.totpConfirm(req, call),
  },
  {
    name: 'auth.totp.disable',
    method: 'POST',
    path: '/totp/disable',
    requestSchema: 'TotpCodeRequest',
    summary: 'Turn TOTP off (needs a current code)',
    run: (f, req, call) => f.totpDisable(req, call),
  },
]

/** Registers the flows' endpoints on core. */
export function registerFlows(trivium: Trivium, auth: AuthService, options: FlowsOptions): AuthFlows {
  const flows = createAuthFlows(auth, options)
  const base = options.basePath ?? '/auth'
  for (const { name, path, run, requestSchema, ...endpoint } of FLOW_ENDPOINTS) {
    const request = requestSchema === undefined ? undefined : requestModel(requestSchema)
    trivium.endpoint(name, { ...endpoint, ...(request && { request }), url: `${base}${path}` }, (req, call) =>
      run(flows, req as never, call),
    )
  }
  return flows
}

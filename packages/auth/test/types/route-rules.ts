// Type test (checked by `pnpm typecheck`, never run), issue 40 item 10: a typo inside `config.triviumRoute`.
// Fastify infers each route's `config` type from the object written (its `ContextConfig` type parameter), so an
// unknown key inside a bare `triviumRoute: { … }` type-checks and is refused only at start (naming the closest
// setting). `TriviumRouteRules` itself is exact — every setting the registered plugins declare, no index signature —
// so `satisfies TriviumRouteRules` (README "Protecting existing routes") makes the typo a compile error.
import type { TriviumRouteRules } from '@trivium/auth'
import '@trivium/protections'
import '@trivium/rbac'
import Fastify from 'fastify'

const app = Fastify()
const handler = async () => 'ok'

app.get(
  '/report',
  {
    config: {
      triviumRoute: {
        auth: 'optional',
        permissions: ['reports:read'],
        roles: ['admin'],
        rateLimit: { requests: 2, windowMs: 60_000 },
        name: 'report',
      } satisfies TriviumRouteRules,
    },
  },
  handler,
)

app.get(
  '/typo',
  {
    config: {
      // @ts-expect-error `permisions` is not a setting of any registered plugin
      triviumRoute: { auth: 'required', permisions: ['reports:read'] } satisfies TriviumRouteRules,
    },
  },
  handler,
)

app.route({
  method: 'GET',
  url: '/typo-in-route',
  // @ts-expect-error `rateLimt` is not a setting of any registered plugin
  config: { triviumRoute: { rateLimt: false } satisfies TriviumRouteRules },
  handler,
})

// A wrong value is a compile error even without `satisfies`
// @ts-expect-error `requird` is not an auth mode
app.get('/mode', { config: { triviumRoute: { auth: 'requird' } } }, handler)

// The settings of each plugin are typed: a rate limit needs both fields
// @ts-expect-error `windowMs` is missing
const _incomplete: TriviumRouteRules = { rateLimit: { requests: 2 } }

// No index signature: a setting nobody declares is not a key of the rules.
type Unknown = 'permisions' extends keyof TriviumRouteRules ? 'loose' : 'exact'
const _exact: Unknown = 'exact'

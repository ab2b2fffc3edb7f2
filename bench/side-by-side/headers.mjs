// The headers the full Trivium stack (bench/stack/server.mjs) sends on a 200 to an allowed Origin, as
// constants: the seven security headers (SPEC.md "Security response headers",
// packages/protections/src/security-headers.ts), the CORS headers of a non-preflight request with an
// allowed Origin (SPEC.md "CORS" rule 3, the stack's defaults) and the three rate-limit headers (SPEC.md
// "Limits" rule 6; values fixed here, computed per request by the stack). Names in lower case, as Fastify
// stores them. Spelled out rather than imported from @trivium/protections: the bare Fastify processes
// must not load any Trivium module (module evaluation order alone moves a process by ~20 %, bench/README.md).
export const SPEC_HEADERS = Object.freeze({
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'x-xss-protection': '1; mode=block',
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'content-security-policy': "default-src 'self'",
  'referrer-policy': 'strict-origin-when-cross-origin',
  'permissions-policy': 'geolocation=(), microphone=(), camera=()',
  'access-control-allow-origin': 'https://app.example.com',
  'access-control-allow-methods': 'GET, POST, PUT, DELETE, OPTIONS',
  'access-control-allow-headers': 'Content-Type, Authorization',
  vary: 'Origin',
  'x-ratelimit-limit': '1000000000',
  'x-ratelimit-remaining': '999999999',
  'x-ratelimit-reset': '1795443716774',
})

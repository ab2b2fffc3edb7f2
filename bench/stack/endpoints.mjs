// The benches' two endpoints: `public.hello` (GET /public, no token) and `secure.hello` (GET /secure,
// permission `hello:read`), both answering {"hello":"world"}. No imports: js-path's `core` case registers
// them on @trivium/core alone without loading the rest of the stack.
export function registerEndpoints(fastify) {
  fastify.trivium.endpoint('public.hello', { method: 'GET', url: '/public', auth: 'public' }, () => ({
    hello: 'world',
  }))
  fastify.trivium.endpoint(
    'secure.hello',
    { method: 'GET', url: '/secure', permissions: ['hello:read'] },
    () => ({ hello: 'world' }),
  )
}

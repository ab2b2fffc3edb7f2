/** Where the HTTP adapter keeps the common request form on the Fastify request. */
export const CALL = Symbol.for('trivium.call')

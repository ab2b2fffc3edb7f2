// What @trivium/core answers for the whole application, only when the application asks for it (the
// demo, which owns its app, does): a guest changes nothing it does not own, so by default the routes
// that are not Trivium's keep the application's (or Fastify's) error handler and 404.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { NotFoundException } from '../errors.js'
import { replyWithError } from './error-reply.js'
import { type ErrorHeaders, frameworkErrorHandler, installFrameworkErrors } from './framework-errors.js'

export const ERROR_HANDLER_ALREADY_SET =
  '@trivium/core: the application already has an error handler (setErrorHandler), which errorHandler: true would replace: register @trivium/core without errorHandler (its default, false) to keep it; endpoints and routes with config.triviumRoute answer in the Trivium error body either way'

export const NOT_FOUND_HANDLER_ALREADY_SET =
  '@trivium/core: the application already has a not-found handler (setNotFoundHandler); register @trivium/core without notFoundHandler (its default, false) to keep it'

/**
 * Whether the context's error handler is the application's: Fastify's `errorHandler` is its own
 * `defaultErrorHandler` until `setErrorHandler` (which stores a bound copy) is called in the context or
 * an ancestor.
 */
function hasApplicationErrorHandler(fastify: FastifyInstance): boolean {
  return fastify.errorHandler.name !== 'defaultErrorHandler'
}

/**
 * `errorHandler: true`: the root error handler (routes that are not endpoints, and the not-found
 * context, which Fastify gives the root's handler), and the refusals answered before any route.
 */
export function installRootErrorHandler(fastify: FastifyInstance, headers: ErrorHeaders): void {
  if (hasApplicationErrorHandler(fastify)) throw new Error(ERROR_HANDLER_ALREADY_SET)
  fastify.setErrorHandler(frameworkErrorHandler(headers))
  installFrameworkErrors(fastify, headers)
}

/** `notFoundHandler: true`: unknown routes answer NotFoundException `Route GET /x not found`. */
export function installNotFoundHandler(fastify: FastifyInstance, headers: ErrorHeaders): void {
  const handler = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0]
    reply.headers(headers)
    return replyWithError(new NotFoundException(`Route ${request.method} ${path} not found`), request, reply)
  }
  try {
    fastify.setNotFoundHandler(handler)
  } catch (err) {
    // In a plugin's body (before start) Fastify refuses only a second handler; its error has no code.
    throw new Error(NOT_FOUND_HANDLER_ALREADY_SET, { cause: err })
  }
}

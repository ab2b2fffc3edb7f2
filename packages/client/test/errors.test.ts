// Issue 15 item 2: the error classes are defined once, in @trivium/wire; core and client re-export them.
import * as client from '@trivium/client'
import * as core from '@trivium/core'
import * as coreInternal from '@trivium/core/internal'
import * as wire from '@trivium/wire'
import t from 'tap'

const names = [
  'TriviumError',
  'UnauthorizedException',
  'TokenExpiredException',
  'ForbiddenException',
  'ValidationException',
  'RateLimitExceededException',
  'NotFoundException',
  'ConflictException',
  'UnsupportedMediaTypeException',
  'PayloadTooLargeException',
  'ServiceUnavailableException',
  'InternalErrorException',
  'NetworkException',
  'TimeoutException',
  'fromErrorBody',
  'isTriviumError',
] as const

t.test('core and client export the very same classes and functions as wire', async (t) => {
  for (const name of names) {
    // fromErrorBody is a client-side helper: core keeps it in its internal entry.
    const fromCore = name === 'fromErrorBody' ? coreInternal : core
    t.equal(
      (fromCore as Record<string, unknown>)[name],
      (wire as Record<string, unknown>)[name],
      `core ${name}`,
    )
    t.equal(
      (client as Record<string, unknown>)[name],
      (wire as Record<string, unknown>)[name],
      `client ${name}`,
    )
  }
  t.equal(core.toErrorBody, wire.toErrorBody)
})

t.test('an error thrown by server code is an instance of the client class', async (t) => {
  const err = new core.ForbiddenException('Insufficient permissions. Required: a')
  t.ok(err instanceof client.ForbiddenException)
  t.equal(client.toClientError(err), err)
  // A copy of another installed version (plain object with our code) becomes this copy's class.
  const foreign = { code: 'TRV_NOT_FOUND', statusCode: 404, message: 'Task 7 not found' }
  const rebuilt = client.toClientError(foreign)
  t.ok(rebuilt instanceof client.NotFoundException)
  t.equal((rebuilt as Error).message, 'Task 7 not found')
})

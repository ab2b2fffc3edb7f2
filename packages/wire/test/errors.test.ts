// The one error vocabulary (issue 15 item 2): one table, one base class, shared by server and client.
import {
  codedError,
  ERROR_KINDS,
  fromErrorBody,
  isTriviumError,
  NetworkException,
  RateLimitExceededException,
  TriviumError,
  toErrorBody,
  ValidationException,
} from '@trivium/wire'
import t from 'tap'

const table: Array<[string, string, number]> = [
  ['UnauthorizedException', 'TRV_UNAUTHORIZED', 401],
  ['TokenExpiredException', 'TRV_TOKEN_EXPIRED', 401],
  ['ForbiddenException', 'TRV_FORBIDDEN', 403],
  ['ValidationException', 'TRV_VALIDATION', 400],
  ['RateLimitExceededException', 'TRV_RATE_LIMITED', 429],
  ['NotFoundException', 'TRV_NOT_FOUND', 404],
  ['ConflictException', 'TRV_CONFLICT', 409],
  ['UnprocessableContentException', 'TRV_UNPROCESSABLE_CONTENT', 422],
  ['UnsupportedMediaTypeException', 'TRV_UNSUPPORTED_MEDIA_TYPE', 415],
  ['PayloadTooLargeException', 'TRV_PAYLOAD_TOO_LARGE', 413],
  ['ServiceUnavailableException', 'TRV_SERVICE_UNAVAILABLE', 503],
  ['InternalErrorException', 'TRV_INTERNAL', 500],
  ['NetworkException', 'TRV_NETWORK', 503],
  ['TimeoutException', 'TRV_TIMEOUT', 504],
]

t.test('the table: every kind, its code and its status', async (t) => {
  t.same(
    Object.entries(ERROR_KINDS).map(([kind, s]) => [kind, s.code, s.status]),
    table,
  )
})

t.test('every class: name, code, status, kind, base class, printed form', async (t) => {
  const wire = (await import('@trivium/wire')) as unknown as Record<string, new (m: string) => TriviumError>
  for (const [kind, code, status] of table) {
    const Kind = wire[kind] as new (m: string) => TriviumError
    const err = kind === 'RateLimitExceededException' ? new RateLimitExceededException(3, 'm') : new Kind('m')
    t.same([err.name, err.code, err.statusCode, err.kind, err.message], [kind, code, status, kind, 'm'])
    t.ok(err instanceof TriviumError && err instanceof Error && err instanceof Kind)
    t.ok(isTriviumError(err))
    t.equal(String(err), `${kind} [${code}]: m`)
  }
})

t.test('toErrorBody / fromErrorBody round-trip, request id and unknown codes', async (t) => {
  const v = new ValidationException('Invalid X: a is required', [{ field: 'a', message: 'is required' }])
  const body = toErrorBody(v, 'req-1')
  t.same(body, {
    statusCode: 400,
    code: 'TRV_VALIDATION',
    error: 'ValidationException',
    message: 'Invalid X: a is required',
    requestId: 'req-1',
    details: [{ field: 'a', message: 'is required' }],
  })
  const back = fromErrorBody(body)
  t.ok(back instanceof ValidationException)
  t.same((back as ValidationException).details, [{ field: 'a', message: 'is required' }])
  t.equal(back.requestId, 'req-1')
  t.same(toErrorBody(new RateLimitExceededException(7)), {
    statusCode: 429,
    code: 'TRV_RATE_LIMITED',
    error: 'RateLimitExceededException',
    message: 'Rate limit exceeded. Try again in 7 seconds',
    retryAfter: 7,
  })
  const unknown = fromErrorBody({
    statusCode: 418,
    code: 'TRV_TEAPOT',
    error: 'TeapotException',
    message: 'x',
  })
  t.same([unknown.name, unknown.code, unknown.statusCode], ['TeapotException', 'TRV_TEAPOT', 418])
  t.notOk(isTriviumError(unknown), 'a code outside the table is not one of ours')
  t.equal(fromErrorBody(null).message, 'Unknown error')
  const cause = new Error('socket hang up')
  t.equal(new NetworkException('lost', { cause }).cause, cause)
})

t.test('codedError: a package error with its own code is named, coded and not a client kind', async (t) => {
  const BadKey = codedError('BadKeyError', 'TRV_X_BAD_KEY', 500, (m: string) => `x: ${m}`, TypeError)
  const err = new BadKey('short')
  t.same([err.name, err.code, err.statusCode, err.message], ['BadKeyError', 'TRV_X_BAD_KEY', 500, 'x: short'])
  t.ok(err instanceof TypeError && err instanceof BadKey)
  t.notOk(isTriviumError(err), 'servers answer it as an internal error')
  const Down = codedError('DownError', 'TRV_X_DOWN', 503, (r: string, _o?: { cause?: unknown }) => r)
  const cause = new Error('ECONNREFUSED')
  t.equal(new Down('closed', { cause }).cause, cause)
})

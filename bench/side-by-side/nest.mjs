// bench/side-by-side (g): NestJS on its Fastify adapter with the usual protections: a JWT guard
// (@nestjs/jwt, HS256 pinned, Bearer token verified per request, `permissions` claim checked) and the
// throttler (@nestjs/throttler as a global guard, in memory, a limit the load cannot reach).
// Plain JavaScript, so the decorators are applied as functions. Prints `TOKEN <jwt>` then `LISTENING <port>`.
import 'reflect-metadata'
import {
  Controller,
  ForbiddenException,
  Get,
  Inject,
  Injectable,
  Module,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common'
import { APP_GUARD, NestFactory } from '@nestjs/core'
import { JwtModule, JwtService } from '@nestjs/jwt'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { ThrottlerGuard, ThrottlerModule } from '@nestjs/throttler'

const SECRET = 'bench-secret-bench-secret-bench-secret-0123'

class PermissionGuard {
  constructor(jwt) {
    this.jwt = jwt
  }
  async canActivate(context) {
    const request = context.switchToHttp().getRequest()
    const header = request.headers.authorization
    if (typeof header !== 'string' || !header.startsWith('Bearer ')) throw new UnauthorizedException()
    let claims
    try {
      claims = await this.jwt.verifyAsync(header.slice(7), { algorithms: ['HS256'], issuer: 'bench' })
    } catch {
      throw new UnauthorizedException()
    }
    if (!claims.permissions?.includes('hello:read')) throw new ForbiddenException()
    request.user = claims
    return true
  }
}
Injectable()(PermissionGuard)
Inject(JwtService)(PermissionGuard, undefined, 0)

class HelloController {
  secure() {
    return { hello: 'world' }
  }
}
const method = (name) => [
  HelloController.prototype,
  name,
  Object.getOwnPropertyDescriptor(HelloController.prototype, name),
]
Get('secure')(...method('secure'))
UseGuards(PermissionGuard)(...method('secure'))
Controller()(HelloController)

class AppModule {}
Module({
  imports: [
    JwtModule.register({
      secret: SECRET,
      signOptions: { algorithm: 'HS256', issuer: 'bench', expiresIn: '1h' },
    }),
    ThrottlerModule.forRoot([{ ttl: 60_000, limit: 1_000_000_000 }]),
  ],
  controllers: [HelloController],
  providers: [PermissionGuard, { provide: APP_GUARD, useClass: ThrottlerGuard }],
})(AppModule)

const app = await NestFactory.create(AppModule, new FastifyAdapter(), { logger: false })
await app.listen(0, '127.0.0.1')
const token = await app.get(JwtService).signAsync({ sub: '1', permissions: ['hello:read'] })
console.log(`TOKEN ${token}`)
console.log(`LISTENING ${app.getHttpServer().address().port}`)

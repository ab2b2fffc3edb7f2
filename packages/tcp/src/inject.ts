// The inject bridge moved to @trivium/frame-session (route-bridge.ts), where every frame transport
// uses it for named Fastify routes; TCP's inject mode uses the same one.
export { httpFormOf, InjectBridge, type InjectOutcome } from '@trivium/frame-session'

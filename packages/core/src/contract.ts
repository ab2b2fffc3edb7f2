// `fastify.trivium.implement(contract, handlers)`: registers every endpoint of a @trivium/contract
// contract with its handler. The handlers' types come from the contract's schemas, so a missing,
// extra or mistyped handler does not compile; at run time the same faults are refused before anything
// is registered.
import {
  type Contract,
  type ContractEndpoint,
  checkContract,
  type EndpointKind,
  type RequestOutput,
  type ResponseInput,
} from '@trivium/contract'
import {
  type BidiStreamHandler,
  type ClientStreamHandler,
  type EndpointDefinition,
  type EndpointOptions,
  RegistrationError,
  type StreamHandler,
  type UnaryHandler,
} from './registry.js'

/** The handler an endpoint of a contract needs: its kind and types come from the contract. */
export type ContractHandler<E extends ContractEndpoint> =
  EndpointKind<E> extends 'bidiStream'
    ? BidiStreamHandler<RequestOutput<E>, ResponseInput<E>>
    : EndpointKind<E> extends 'clientStream'
      ? ClientStreamHandler<RequestOutput<E>, ResponseInput<E>>
      : EndpointKind<E> extends 'stream'
        ? StreamHandler<RequestOutput<E>, ResponseInput<E>>
        : UnaryHandler<RequestOutput<E>, ResponseInput<E>>

/** One handler per endpoint of the contract. */
export type ContractHandlers<C extends Contract> = { [K in keyof C]: ContractHandler<C[K]> }

/** What a contract leaves to the server: the settings other packages declare (auth, permissions …). */
export type ContractEndpointSettings = Omit<
  EndpointOptions,
  'method' | 'url' | 'request' | 'response' | 'status' | 'summary'
>

/** Server-side settings per endpoint of the contract. */
export type ContractSettings<C extends Contract> = { [K in keyof C]?: ContractEndpointSettings }

/** The registration methods `implement` uses (those of the context it is called on). */
interface Registrar {
  endpoint(name: string, options: EndpointOptions, handler: UnaryHandler): EndpointDefinition
  stream(name: string, options: EndpointOptions, handler: StreamHandler): EndpointDefinition
  clientStream(name: string, options: EndpointOptions, handler: ClientStreamHandler): EndpointDefinition
  bidiStream(name: string, options: EndpointOptions, handler: BidiStreamHandler): EndpointDefinition
}

/** A handler of the contract as registration takes it: the one of its kind (the contract's types checked that). */
type ContractHandlerFn = UnaryHandler & StreamHandler & ClientStreamHandler & BidiStreamHandler

/** Every handler and setting names an endpoint of the contract, and every endpoint has a handler function. */
function checkHandlers(
  contract: Contract,
  handlers: unknown,
  settings: unknown,
): { name: string; entry: ContractEndpoint; handler: ContractHandlerFn }[] {
  if (typeof handlers !== 'object' || handlers === null) {
    throw new RegistrationError('implement(): handlers must be an object (endpoint name → handler)')
  }
  if (typeof settings !== 'object' || settings === null) {
    throw new RegistrationError('implement(): settings must be an object (endpoint name → settings)')
  }
  for (const [what, table] of [
    ['handler', handlers],
    ['settings', settings],
  ] as const) {
    for (const name of Object.keys(table)) {
      if (!Object.hasOwn(contract, name)) {
        throw new RegistrationError(`implement(): ${what} "${name}" names no endpoint of the contract`)
      }
    }
  }
  const endpoints: { name: string; entry: ContractEndpoint; handler: ContractHandlerFn }[] = []
  for (const [name, entry] of Object.entries(contract)) {
    const handler: unknown = (handlers as Record<string, unknown>)[name]
    if (typeof handler !== 'function') {
      throw new RegistrationError(`implement(): endpoint "${name}" of the contract has no handler function`)
    }
    endpoints.push({ name, entry, handler: handler as ContractHandlerFn })
  }
  return endpoints
}

/** Registers every endpoint of `contract` on `trivium`; nothing when the contract or a handler is refused. */
export function implementContract<C extends Contract>(
  trivium: Registrar,
  contract: C,
  handlers: ContractHandlers<C>,
  settings: ContractSettings<C> = {},
): { [K in keyof C]: EndpointDefinition } {
  checkContract(contract)
  const endpoints = checkHandlers(contract, handlers, settings)
  const definitions: Record<string, EndpointDefinition> = {}
  for (const { name, entry, handler } of endpoints) {
    const { streaming, requestStream, ...route } = entry
    // The contract's schemas go to the registration as they are: it turns each into a model.
    const options = { ...(settings as Record<string, object | undefined>)[name], ...route } as EndpointOptions
    definitions[name] = requestStream
      ? streaming
        ? trivium.bidiStream(name, options, handler)
        : trivium.clientStream(name, options, handler)
      : streaming
        ? trivium.stream(name, options, handler)
        : trivium.endpoint(name, options, handler)
  }
  return definitions as { [K in keyof C]: EndpointDefinition }
}

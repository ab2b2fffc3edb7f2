// @trivium/contract — endpoint names, routes and schemas shared by server and client (no handlers), and
// the types both read from them. Browser-safe, no dependencies; TypeBox's types come from the optional
// peer `typebox`.
export {
  type Contract,
  type ContractEndpoint,
  ContractError,
  checkContract,
  defineContract,
  type EndpointKind,
  HTTP_METHODS,
  type HttpMethod,
  type NamesOf,
  type RequestInput,
  type RequestOutput,
  type ResponseInput,
  type ResponseOutput,
} from './contract.js'
export {
  isModelLike,
  type ModelLike,
  type Schema,
  type SchemaInput,
  type SchemaOutput,
  type StandardSchemaLike,
} from './schema-types.js'

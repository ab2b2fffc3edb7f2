/**
 * The type of a request or response no model describes (an endpoint without `request` or `response`, a
 * client call without a spec): any JSON value, which a handler or caller reads without a cast. The one
 * `any` of the endpoint APIs: every default type parameter of core's endpoints, handlers and
 * definitions and of the client's calls is this alias, so the choice is made (and can be narrowed to
 * `unknown` in a major release) in one place.
 */
export type Untyped = any

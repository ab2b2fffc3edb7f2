// @trivium/validation's refusals at setup, one row per code (README "Setup errors"): each a TypeError with
// `code`. An endpoint's declaration is checked once at start-up, so a typo in a rule fails `ready()`.
import { setupErrors } from '@trivium/core/internal'

export const SETUP = setupErrors('@trivium/validation', {
  TRV_VALIDATION_AFTER: {
    when: 'the `after` option is not a list of middleware names',
    message: () => 'after must be a list of middleware names',
  },
  TRV_VALIDATION_VALIDATE: {
    when: "an endpoint's `validate` is not an object of field rules",
    message: (endpoint: string) => `endpoint "${endpoint}": validate must be an object of field rules`,
  },
  TRV_VALIDATION_RULE: {
    when: "an endpoint's `validate` names a rule that does not exist",
    message: (endpoint: string, rule: unknown, field: string) =>
      `endpoint "${endpoint}": unknown rule "${String(rule)}" for field "${field}"`,
  },
  TRV_VALIDATION_MIN_LENGTH: {
    when: "a password rule's `minLength` is not a positive integer",
    message: (endpoint: string, field: string) =>
      `endpoint "${endpoint}": minLength of "${field}" must be a positive integer`,
  },
  TRV_VALIDATION_SANITIZE: {
    when: "an endpoint's `sanitize` is not a list of field names",
    message: (endpoint: string) => `endpoint "${endpoint}": sanitize must be a list of field names`,
  },
})

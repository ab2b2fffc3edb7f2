// @trivium/openapi's refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
import { setupErrors } from '@trivium/core/internal'

export const SETUP = setupErrors('@trivium/openapi', {
  TRV_OPENAPI_OPTIONS: {
    when: 'the plugin is registered without options',
    message: () => 'options with info { title, version } are required',
  },
  TRV_OPENAPI_PATH: {
    when: '`path` or `docsPath` is not a path starting with "/" (or has spaces, "?" or "#")',
    message: (what: string) => `${what} must be a path starting with "/" (no spaces, "?" or "#")`,
  },
  TRV_OPENAPI_DOCS_PATH: {
    when: '`path` and `docsPath` are the same',
    message: () => 'path and docsPath must differ',
  },
  TRV_OPENAPI_INFO: {
    when: '`info` is missing or not an object',
    message: () => 'info { title, version } is required',
  },
  TRV_OPENAPI_INFO_TITLE: {
    when: '`info.title` is not a non-empty string',
    message: () => 'info.title must be a non-empty string',
  },
  TRV_OPENAPI_INFO_VERSION: {
    when: '`info.version` is not a non-empty string',
    message: () => 'info.version must be a non-empty string',
  },
  TRV_OPENAPI_INFO_DESCRIPTION: {
    when: '`info.description` is not a string',
    message: () => 'info.description must be a string',
  },
  TRV_OPENAPI_SERVERS: {
    when: '`servers` is not an array',
    message: () => 'servers must be an array of { url, description? }',
  },
  TRV_OPENAPI_SERVER_URL: {
    when: 'a server has no `url` string',
    message: () => 'each server needs a url string',
  },
  TRV_OPENAPI_SERVER_DESCRIPTION: {
    when: "a server's `description` is not a string",
    message: () => 'server description must be a string',
  },
  TRV_OPENAPI_FLAG: {
    when: '`auth`, `binary` or `tokenQuery` is not a boolean',
    message: (flag: string) => `${flag} must be a boolean`,
  },
  TRV_OPENAPI_ERROR_STATUSES: {
    when: "an endpoint's `errorStatuses` lists a status the document has no response for (checked at `ready()`)",
    message: (endpoint: string, statuses: string) =>
      `endpoint "${endpoint}": errorStatuses must list statuses among ${statuses}`,
  },
})

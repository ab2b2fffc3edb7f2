// @trivium/metrics' refusals at setup, one row per code (README "Setup errors"): each a TypeError with `code`.
import { setupErrors } from '@trivium/core/internal'

export const SETUP = setupErrors('@trivium/metrics', {
  TRV_METRICS_OPTIONS: {
    when: 'the options are not an object',
    message: () => 'options must be an object',
  },
  TRV_METRICS_EXPOSE: {
    when: '`expose` is not a boolean',
    message: () => 'expose must be a boolean',
  },
  TRV_METRICS_PATH: {
    when: '`path` does not start with "/"',
    message: () => 'path must start with "/" (e.g. /metrics)',
  },
  TRV_METRICS_TOKEN: {
    when: '`token` is not a string of at least 16 characters',
    message: () => 'token must be a string of at least 16 characters (e.g. openssl rand -hex 16)',
  },
  TRV_METRICS_LISTEN_PORT: {
    when: '`listen.port` is not a port number',
    message: () => 'listen.port must be a port number (0 = any)',
  },
  TRV_METRICS_LISTEN_HOST: {
    when: '`listen.host` is not a string',
    message: () => 'listen.host must be a string',
  },
  TRV_METRICS_DEFAULT_METRICS: {
    when: '`defaultMetrics` is not a boolean',
    message: () => 'defaultMetrics must be a boolean',
  },
  TRV_METRICS_BUCKETS: {
    when: '`buckets` are not increasing positive numbers',
    message: () => 'buckets must be increasing positive numbers of seconds',
  },
})

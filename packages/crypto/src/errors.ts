// Errors of @trivium/crypto, made with @fastify/error (`TRV_CRYPTO_*` codes). Argument and configuration
// errors are TypeErrors; none of them carries a key, a salt, a password or a plaintext. They are not
// client errors: core maps them to a 500 with its fixed "Internal server error" message.
import createError from '@fastify/error'

function named<C>(name: string, Base: C): C {
  // A subclass whose `name` says what it is ("InvalidKeyError" rather than "FastifyError").
  const Named = {
    [name]: class extends (Base as unknown as new (...args: unknown[]) => Error) {
      constructor(...args: unknown[]) {
        super(...args)
        this.name = name
      }
    },
  }[name]!
  return Named as unknown as C
}

/** The configured key is not strict base64 of exactly 32 bytes (thrown by the DataEncryptor constructor). */
export const InvalidKeyError = named(
  'InvalidKeyError',
  createError<'TRV_CRYPTO_INVALID_KEY', [string]>('TRV_CRYPTO_INVALID_KEY', '%s', 500, TypeError),
)

/** An argument has the wrong shape (decrypt payload not `<iv>:<ciphertext>`, bad base64, bad option). */
export const InvalidArgumentError = named(
  'InvalidArgumentError',
  createError<'TRV_CRYPTO_INVALID_ARGUMENT', [string]>('TRV_CRYPTO_INVALID_ARGUMENT', '%s', 500, TypeError),
)

/** GCM authentication failed: the IV or ciphertext was changed, or another key encrypted it. */
export const DecryptionError = named(
  'DecryptionError',
  createError<'TRV_CRYPTO_DECRYPT_FAILED', []>(
    'TRV_CRYPTO_DECRYPT_FAILED',
    'Decryption failed: the data was tampered with or the key is wrong',
    500,
  ),
)

/** The password worker pool was shut down, or a worker died, while a job was in flight. */
export const PasswordWorkerError = named(
  'PasswordWorkerError',
  createError<'TRV_CRYPTO_WORKER', [string]>('TRV_CRYPTO_WORKER', '%s', 500),
)

// Errors of @trivium/crypto (`TRV_CRYPTO_*` codes), made with @trivium/wire's `codedError`. Argument and
// configuration errors are TypeErrors; none of them carries a key, a salt, a password or a plaintext.
// They are not client errors: core maps them to a 500 with its fixed "Internal server error" message.
import { codedError } from '@trivium/wire/errors'

const text = (message: string) => message

/** The configured key is not strict base64 of exactly 32 bytes (thrown by the DataEncryptor constructor). */
export const InvalidKeyError = codedError('InvalidKeyError', 'TRV_CRYPTO_INVALID_KEY', 500, text, TypeError)
export type InvalidKeyError = InstanceType<typeof InvalidKeyError>

/** An argument has the wrong shape (decrypt payload not `<iv>:<ciphertext>`, bad base64, bad option). */
export const InvalidArgumentError = codedError(
  'InvalidArgumentError',
  'TRV_CRYPTO_INVALID_ARGUMENT',
  500,
  text,
  TypeError,
)
export type InvalidArgumentError = InstanceType<typeof InvalidArgumentError>

/** GCM authentication failed: the IV or ciphertext was changed, or another key encrypted it. */
export const DecryptionError = codedError(
  'DecryptionError',
  'TRV_CRYPTO_DECRYPT_FAILED',
  500,
  () => 'Decryption failed: the data was tampered with or the key is wrong',
)
export type DecryptionError = InstanceType<typeof DecryptionError>

/** The password worker pool was shut down, or a worker died, while a job was in flight. */
export const PasswordWorkerError = codedError('PasswordWorkerError', 'TRV_CRYPTO_WORKER', 500, text)
export type PasswordWorkerError = InstanceType<typeof PasswordWorkerError>

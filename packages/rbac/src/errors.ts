// Typed errors for bad input. Only core's kinds are used, so every transport sends them with the
// standard body: an unknown id is NotFoundException (404), a duplicate name ConflictException (409), a
// malformed argument ValidationException (400) with `details` naming the field. SQL errors never reach
// a client.
import { ConflictException, type FieldError, NotFoundException, ValidationException } from '@trivium/core'

export const MAX_NAME_LENGTH = 100
export const MAX_DESCRIPTION_LENGTH = 1000
const INT4_MAX = 2147483647

export function invalid(field: string, message: string): ValidationException {
  const details: FieldError[] = [{ field, message }]
  return new ValidationException(message, details)
}

/** A role or permission name that is already taken: the request is valid, the store says no. */
export function nameTaken(what: 'Role' | 'Permission', name: string): ConflictException {
  return new ConflictException(`${what} "${name}" already exists`)
}

export function roleNotFound(roleId: number): NotFoundException {
  return new NotFoundException(`Role ${roleId} not found`)
}

export function permissionNotFound(ids: number[]): NotFoundException {
  return ids.length === 1
    ? new NotFoundException(`Permission ${ids[0]} not found`)
    : new NotFoundException(`Permissions not found: ${ids.join(', ')}`)
}

export function userNotFound(userId: number): NotFoundException {
  return new NotFoundException(`User ${userId} not found`)
}

/** Ids are PostgreSQL `integer`s: a positive safe integer up to 2^31-1. */
export function checkId(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > INT4_MAX) {
    throw invalid(field, `${field} must be a positive integer`)
  }
  return value
}

export function checkOptionalId(value: unknown, field: string): number | null {
  return value === undefined || value === null ? null : checkId(value, field)
}

export function checkName(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.trim() === '' || value !== value.trim()) {
    throw invalid(field, `${field} must be a non-empty string without surrounding spaces`)
  }
  if ([...value].length > MAX_NAME_LENGTH)
    throw invalid(field, `${field} must be at most ${MAX_NAME_LENGTH} characters`)
  return value
}

export function checkDescription(value: unknown): string {
  if (value === undefined || value === null) return ''
  if (typeof value !== 'string') throw invalid('description', 'description must be a string')
  if ([...value].length > MAX_DESCRIPTION_LENGTH) {
    throw invalid('description', `description must be at most ${MAX_DESCRIPTION_LENGTH} characters`)
  }
  return value
}

export function checkIdList(value: unknown, field: string): number[] {
  if (value === undefined || value === null) return []
  if (!Array.isArray(value)) throw invalid(field, `${field} must be a list of positive integers`)
  const ids = value.map((v) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > INT4_MAX) {
      throw invalid(field, `${field} must be a list of positive integers`)
    }
    return v
  })
  return [...new Set(ids)]
}

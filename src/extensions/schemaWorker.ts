import Ajv2020, { type ValidateFunction } from "ajv/dist/2020.js"
import addFormats from "ajv-formats"

/**
 * The thread untrusted schemas are compiled and run on (SchemaValidator starts it, and ends it
 * when a validation runs over its budget). Compiled validators are kept by schema hash, so a
 * schema sent with every payment is compiled once; a schema that failed to compile keeps its
 * error. Built into the binary as its own entry point (package.json `build`).
 */

export interface ValidationRequest {
  readonly id: number
  readonly hash: string
  readonly schema: unknown
  readonly info: unknown
}
export interface ValidationAnswer {
  readonly id: number
  /** null when `info` is valid, else why not. */
  readonly refusal: string | null
}

/** Compiled validators kept, oldest dropped first. */
const MAX_CACHED = 256
const compiled = new Map<string, ValidateFunction | string>()

/**
 * A fresh Ajv per schema, so no schema of one payer lingers for the next; strict (an unknown
 * keyword is an error, not ignored); no `loadSchema`, so a remote reference fails to compile
 * instead of being fetched.
 */
const compile = (schema: unknown): ValidateFunction | string => {
  try {
    const ajv = new Ajv2020({
      strict: true,
      strictTypes: false,
      strictTuples: false,
      strictRequired: false,
      allErrors: false,
      logger: false,
      addUsedSchema: false
    })
    addFormats(ajv, { mode: "fast" })
    return ajv.compile(schema as object)
  } catch (error) {
    return `schema could not be compiled: ${error instanceof Error ? error.message : String(error)}`
  }
}

const validatorFor = (hash: string, schema: unknown) => {
  const found = compiled.get(hash)
  if (found !== undefined) return found
  const made = compile(schema)
  compiled.set(hash, made)
  if (compiled.size > MAX_CACHED) compiled.delete(compiled.keys().next().value as string)
  return made
}

const validate = ({ hash, schema, info }: ValidationRequest): string | null => {
  const validator = validatorFor(hash, schema)
  if (typeof validator === "string") return validator
  if (validator(info)) return null
  const first = validator.errors?.[0]
  return `info failed schema validation: ${first ? `${first.instancePath || "(root)"} ${first.message ?? "is invalid"}` : "invalid"}`
}

declare const self: Worker

self.onmessage = (event: MessageEvent<ValidationRequest>) => {
  self.postMessage({ id: event.data.id, refusal: validate(event.data) } satisfies ValidationAnswer)
}
// Warmed up (Ajv's first compile costs far more than later ones) and listening: validations sent
// from now on are timed from when they are sent.
compile({ type: "object", properties: { a: { type: "string", format: "uri" } }, required: ["a"] })
self.postMessage({ ready: true })

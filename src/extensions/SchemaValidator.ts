import { createHash } from "node:crypto"
import { Context, Duration, Effect, Either, Layer, Option } from "effect"
import { canonicalize } from "../encoding/canonicalJson.js"
import type { ValidationAnswer, ValidationRequest } from "./schemaWorker.js"

/**
 * How long one validation of an untrusted schema may run. Ajv's compiled code cannot be
 * interrupted from inside, so the worker thread running it is ended when this runs out, and a new
 * one takes its place; the request thread never runs payer-supplied schemas at all.
 */
export const VALIDATION_BUDGET_MS = 500

/**
 * The worker's entry point. In the compiled binary it is an entry point of its own (package.json
 * `build`), stored under the entry points' common root (src/) while this module is bundled into the
 * binary's root file, so the path differs from the checkout's.
 */
/** How long a worker may take to load Ajv and warm up (about 0.4 s here) before it is given up. */
const WORKER_START = Duration.seconds(10)

const WORKER_URL = import.meta.url.startsWith("file:///$bunfs/")
  ? new URL("./extensions/schemaWorker.ts", import.meta.url)
  : new URL("./schemaWorker.ts", import.meta.url)

/** The cache key of a compiled schema: the SHA-256 of its canonical JSON (key order does not matter). */
export const schemaHash = (schema: unknown) =>
  createHash("sha256")
    .update(Either.getOrElse(canonicalize(schema), () => JSON.stringify(schema)))
    .digest("hex")

export interface SchemaValidatorShape {
  /** Right when `info` is valid against `schema`; Left with why not (including a budget overrun). Never fails. */
  readonly validate: (info: unknown, schema: unknown) => Effect.Effect<Either.Either<void, string>>
}

/**
 * Validates untrusted JSON Schemas (already passed through `schemaGuard`) on a Bun Worker, one at a
 * time, each within `budgetMs`. Over the budget, or if the worker breaks, the worker is ended and
 * the validation answers Left; the next one gets a fresh worker (started ahead after an overrun).
 * The first worker starts with the first validation; its start-up is never charged to a budget.
 */
export class SchemaValidator extends Context.Tag("sextant/SchemaValidator")<SchemaValidator, SchemaValidatorShape>() {
  static readonly layer = (budgetMs: number = VALIDATION_BUDGET_MS) =>
    Layer.scoped(
      SchemaValidator,
      Effect.suspend(() => make(budgetMs))
    )
  static readonly Live = SchemaValidator.layer()
}

const make = (budgetMs: number) =>
  Effect.gen(function* () {
    /** A worker and when it has loaded Ajv: its start-up is not charged to the budget. */
    interface Running {
      readonly thread: Worker
      readonly ready: Promise<void>
    }
    let worker: Running | null = null
    let nextId = 0
    const waiting = new Map<number, (refusal: string | null) => void>()

    const spawn = (): Running => {
      // Not kept alive for its own sake: a CLI run that built the API exits when its work is done.
      const thread = new Worker(WORKER_URL, { ref: false })
      const ready = new Promise<void>((resolve) => {
        thread.onmessage = (event: MessageEvent<ValidationAnswer | { ready: true }>) => {
          if ("ready" in event.data) resolve()
          else waiting.get(event.data.id)?.(event.data.refusal)
        }
        // A worker that breaks (or cannot load) is dropped, not replaced at once: the next
        // validation starts another, so a broken build cannot spin in a restart loop.
        thread.onerror = () => {
          thread.terminate()
          if (worker === running) worker = null
          resolve()
          for (const answer of waiting.values()) answer("schema could not be validated")
        }
      })
      const running = { thread, ready }
      return running
    }
    /** Ends a worker that ran over the budget; a fresh one starts loading for the next validation. */
    const end = (which: Running) => {
      which.thread.terminate()
      if (worker === which) worker = spawn()
    }
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        const last = worker
        worker = null
        last?.thread.terminate()
      })
    )

    const one = yield* Effect.makeSemaphore(1)
    const validate = (info: unknown, schema: unknown) =>
      one.withPermits(1)(
        Effect.gen(function* () {
          const current = worker ?? spawn()
          worker = current
          const started = yield* Effect.promise(() => current.ready).pipe(Effect.timeout(WORKER_START), Effect.option)
          if (Option.isNone(started)) {
            current.thread.terminate()
            if (worker === current) worker = null
            return Either.left("the schema validator did not start")
          }
          if (worker !== current) return Either.left("schema could not be validated")
          return yield* Effect.async<Either.Either<void, string>>((resume) => {
            const id = nextId++
            const finish = (refusal: string | null) => {
              clearTimeout(timer)
              waiting.delete(id)
              resume(Effect.succeed(refusal === null ? Either.right(undefined) : Either.left(refusal)))
            }
            const timer = setTimeout(() => {
              end(current)
              finish(`schema validation ran over its budget of ${budgetMs} ms`)
            }, budgetMs)
            waiting.set(id, finish)
            current.thread.postMessage({ id, hash: schemaHash(schema), schema, info } satisfies ValidationRequest)
            // Interrupted while it runs: the worker may be busy for long, so it is replaced.
            return Effect.sync(() => {
              clearTimeout(timer)
              if (waiting.delete(id)) end(current)
            })
          })
        })
      )
    return { validate } satisfies SchemaValidatorShape
  })

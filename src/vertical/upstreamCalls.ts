import { NotFoundError } from "@stellar/stellar-sdk"
import { Duration, Effect, Option, Schema } from "effect"
import { describeFailure as describe } from "../ledger/clients.js"
import { UpstreamFailure } from "./errors.js"

/**
 * How the vertical calls Horizon and Soroban RPC: each call bounded by the upstream timeout, and
 * every failure, timeout or unexpected shape an UpstreamFailure naming the upstream and the call.
 */
export const upstreamCalls = (timeoutMs: number) => {
  const timeout = Duration.millis(timeoutMs)

  const bounded =
    (source: UpstreamFailure["source"], what: string) =>
    <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E | UpstreamFailure> =>
      Effect.timeoutFail(effect, {
        duration: timeout,
        onTimeout: () =>
          new UpstreamFailure({ source, message: `${source} ${what} did not answer within ${timeoutMs} ms` })
      })

  const call = <A>(source: UpstreamFailure["source"], what: string, run: () => Promise<A>) =>
    Effect.tryPromise({
      try: run,
      catch: (e) => new UpstreamFailure({ source, message: `${source} ${what} failed: ${describe(e)}` })
    }).pipe(bounded(source, what))

  /** Horizon's 404 is an answer (no such account), every other failure is the upstream's. */
  const horizonCall = <A>(what: string, run: () => Promise<A>) =>
    Effect.tryPromise({ try: run, catch: (e) => e }).pipe(
      Effect.map(Option.some),
      Effect.catchIf(
        (e) => e instanceof NotFoundError,
        () => Effect.succeed(Option.none<A>())
      ),
      Effect.mapError(
        (e) => new UpstreamFailure({ source: "horizon", message: `horizon ${what} failed: ${describe(e)}` })
      ),
      bounded("horizon", what)
    )

  const decode =
    <A, I>(schema: Schema.Schema<A, I>, source: UpstreamFailure["source"], what: string) =>
    (value: unknown) =>
      Schema.decodeUnknown(schema)(value).pipe(
        Effect.mapError(
          (e) =>
            new UpstreamFailure({
              source,
              message: `${source} ${what} answered an unexpected shape: ${e.message.split("\n")[0]}`
            })
        )
      )

  const decodeOption =
    <A, I>(schema: Schema.Schema<A, I>, what: string) =>
    (found: Option.Option<unknown>) =>
      Option.match(found, {
        onNone: () => Effect.succeed(Option.none<A>()),
        onSome: (value) => Effect.map(decode(schema, "horizon", what)(value), Option.some)
      })

  return { call, horizonCall, decode, decodeOption }
}

import { type Context, Effect, Layer } from "effect"

/**
 * A member the test did not stub. It is both a function returning a dying Effect and that Effect
 * itself, since the proxy cannot tell a method (`probeUrl(...)`) from an Effect member (`prune`).
 */
const unstubbed = (service: string, member: string) => {
  const dies = Effect.dieMessage(`${service}.${member} was called but the test did not stub it`)
  const both = Object.assign(() => dies, dies)
  return Object.setPrototypeOf(both, Object.getPrototypeOf(dies))
}

/**
 * `tag`'s service made of `partial`: a stubbed member answers as given; any other dies with a
 * defect naming the service and the member, so a test states exactly what it expects to be used.
 */
export const makeTestLayer =
  <I, S extends object>(tag: Context.Tag<I, S>) =>
  (partial: Partial<S>): Layer.Layer<I> =>
    Layer.succeed(
      tag,
      new Proxy(partial as S, {
        get: (target, key) =>
          // Symbols and `then` are probes by the runtime and by `await`, not members of the service.
          key in target || typeof key === "symbol" || key === "then"
            ? Reflect.get(target, key)
            : unstubbed(tag.key, key)
      })
    )

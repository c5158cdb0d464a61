import { Schema } from "effect"

/** Field schemas the config sections share. */
export const PositiveInt = Schema.Int.pipe(Schema.positive())
export const NonNegativeNumber = Schema.Number.pipe(Schema.finite(), Schema.nonNegative())
export const Ratio = Schema.Number.pipe(Schema.between(0, 1))
export const opt = <S extends Schema.Schema.Any>(schema: S, value: Schema.Schema.Type<S>) =>
  Schema.optionalWith(schema, { default: () => value })

export const HttpUrl = Schema.String.pipe(
  Schema.pattern(/^https?:\/\/\S+$/, { message: () => "expected an http(s) URL" })
)

import { HttpApiSchema } from "@effect/platform"
import { SchemaAST as AST, Option, Schema } from "effect"

/**
 * Every non-2xx body is `{error, message}`: `error` is a stable machine code, `message` a sentence
 * for people. Each code is one `Schema.TaggedError` whose `error` is that literal and whose HTTP
 * status is annotated on it, so code fails with it (`yield* new NotFound({ message })`) and matches
 * it by tag (`Effect.catchTag("NotFound", ...)`), and the OpenAPI document lists, per endpoint,
 * every code it can answer. The tag is not part of the wire: what HttpApi encodes and documents is
 * `wire(ErrorClass)`, the class's own fields without `_tag`.
 */
const codeOf = <const Code extends string>(code: Code) =>
  Schema.Literal(code).pipe(
    Schema.propertySignature,
    Schema.withConstructorDefault(() => code)
  )

/** The factory of an error class: its tag, its `error` code, its status and description, and any fields beyond `message`. */
export const ApiError =
  <Self>() =>
  <
    const Tag extends string,
    const Code extends string,
    const Fields extends Schema.Struct.Fields = Record<never, never>
  >(
    tag: Tag,
    code: Code,
    status: number,
    description: string,
    fields: Fields = {} as Fields
  ) =>
    Schema.TaggedError<Self>(tag)(
      tag,
      { error: codeOf(code), message: Schema.String, ...fields },
      HttpApiSchema.annotations({ status, description })
    )

/** The HTTP status an error is answered with (annotated on its class), 500 for anything that is not an API error. */
export const statusOfError = (error: unknown): number => {
  const ast = (error as { constructor?: { ast?: unknown } } | null)?.constructor?.ast
  return ast !== undefined ? HttpApiSchema.getStatusErrorAST(ast as never) : 500
}

/** An API error class: a tagged error with its status, description and fields. */
export interface ApiErrorClass<Self = any> extends Schema.Schema<Self, any> {
  readonly _tag: string
  readonly identifier: string
  readonly fields: Schema.Struct.Fields
}

/** The body's fields of an error class: its own without `_tag`. */
export type WireFields<C extends ApiErrorClass> = Omit<C["fields"], "_tag">

/** The body's fields of an error class: its own without `_tag`. */
export const wireFields = <C extends ApiErrorClass>(errorClass: C): WireFields<C> => {
  const { _tag, ...body } = errorClass.fields
  return body as WireFields<C>
}

const wires = new WeakMap<ApiErrorClass, unknown>()

/**
 * The schema HttpApi declares and encodes an error class with: its body without `_tag`, under the
 * class's identifier, status and description, so `/openapi.json` and every body stay `{error,
 * message}` (and `code` or `retryAfterSeconds` where a class has them).
 */
export const wire = <C extends ApiErrorClass>(
  errorClass: C
): Schema.Schema<Schema.Schema.Type<C>, Schema.Struct.Encoded<WireFields<C>>> => {
  const known = wires.get(errorClass)
  if (known !== undefined) return known as any
  const description = AST.getDescriptionAnnotation(
    AST.isTransformation(errorClass.ast) ? errorClass.ast.to : errorClass.ast
  ).pipe(Option.getOrUndefined)
  const tag = errorClass._tag
  const schema = Schema.transform(
    Schema.Struct(wireFields(errorClass)).annotations({ description }),
    errorClass as ApiErrorClass,
    {
      strict: false,
      decode: (body) => ({ ...(body as object), _tag: tag }),
      encode: ({ _tag, ...body }) => body
    }
  ).annotations({
    identifier: errorClass.identifier,
    ...HttpApiSchema.annotations({ status: HttpApiSchema.getStatusErrorAST(errorClass.ast), description })
  })
  wires.set(errorClass, schema)
  return schema as any
}

export const ErrorBody = Schema.Struct({ error: Schema.String, message: Schema.String }).annotations({
  identifier: "ErrorBody"
})
export type ErrorBody = typeof ErrorBody.Type

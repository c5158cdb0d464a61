import { ParseResult } from "effect"

/** A schema issue as `ParseResult.ArrayFormatter` (and HttpApi's decode error) report it. */
export interface Issue {
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

const LITERAL = /^Expected (".*"|\d+|true|false|null), actual (.*)$/s

/**
 * One clause per failing field, for people. An optional field that fails also reports "Expected
 * undefined" from the other branch of its union: that adds nothing and is dropped. A field that
 * missed every member of a literal union ("Expected \"a\", actual x" once per member) becomes
 * one clause listing what is allowed.
 */
export const describeIssues = (issues: ReadonlyArray<Issue>): string => {
  const useful = issues.filter((issue) => !issue.message.startsWith("Expected undefined"))
  const byField = new Map<string, Array<string>>()
  for (const issue of useful.length > 0 ? useful : issues) {
    const field = issue.path.length > 0 ? issue.path.map(String).join(".") : "(body)"
    byField.set(field, [...(byField.get(field) ?? []), issue.message])
  }
  return [...byField]
    .map(([field, messages]) => {
      const literals = messages.map((m) => LITERAL.exec(m))
      if (literals.length > 1 && literals.every((m) => m !== null)) {
        return `${field}: expected one of ${literals.map((m) => m![1]).join(", ")}, actual ${literals[0]![2]}`
      }
      return [...new Set(messages)].map((m) => `${field}: ${m}`).join("; ")
    })
    .join("; ")
}

export const describeParseError = (error: ParseResult.ParseError): string =>
  describeIssues(ParseResult.ArrayFormatter.formatErrorSync(error))

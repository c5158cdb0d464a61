import { Logger } from "effect"
import type { Config } from "../config.js"
import { RedactingLogger } from "../redaction/RedactingLogger.js"
import { redactorFor } from "../redaction/redact.js"

/** For commands whose stdout is data (MCP messages, probe JSON, import summaries): log lines go to stderr. */
export const stderrLogs = (config: Config) =>
  RedactingLogger(redactorFor(config), Logger.withConsoleError(Logger.logfmtLogger))

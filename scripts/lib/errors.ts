/** An error whose message is the whole story: printed without a stack trace. */
export class ScriptError extends Error {}

/** A bad command line: printed with the usage text, exit code 2. */
export class UsageError extends ScriptError {}

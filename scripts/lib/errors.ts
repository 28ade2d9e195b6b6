/** An error whose message is the whole story: printed without a stack trace. */
export class ScriptError extends Error {}

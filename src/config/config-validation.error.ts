/** A variable of the environment is missing or malformed: its message names the variable first. */
export class ConfigValidationError extends Error {}

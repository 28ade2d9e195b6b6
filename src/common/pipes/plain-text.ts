import { ValidateBy, type ValidationOptions } from 'class-validator';

/**
 * C0 and C1 controls (NUL, ESC, DEL, newlines, …), the line and paragraph separators, and the
 * bidirectional formatting characters (marks, embeddings, overrides, isolates): in a name shown to
 * people they hide or reorder what is around them (U+202E reverses the dashboard's card header).
 */
const NOT_PLAIN_TEXT = /[\p{Cc}\u2028\u2029\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/u;

export function isPlainText(value: unknown): boolean {
  return typeof value === 'string' && !NOT_PLAIN_TEXT.test(value);
}

/** A text field shown as it is written (a goods name): refused with 400 if it holds any of those. */
export function IsPlainText(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isPlainText',
      validator: {
        validate: isPlainText,
        defaultMessage: (args) =>
          `${args?.property ?? 'text'} must not contain control characters or bidirectional formatting characters`,
      },
    },
    options,
  );
}

/** Shared by the message parsers: a message body must be a JSON object of a known version. */
export const ORDER_NO = /^[A-Z0-9]{8,32}$/;

export const isPositiveInt = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0;

/**
 * The body as a JSON object of one of `versions` (version 1 unless said), or why it is not one
 * (it then goes to the DLQ).
 */
export function parseVersionedObject(
  content: Buffer | string,
  versions: readonly number[] = [1],
): Record<string, unknown> | string {
  let raw: unknown;
  try {
    raw = JSON.parse(typeof content === 'string' ? content : content.toString('utf8'));
  } catch {
    return 'payload is not JSON';
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    return 'payload is not an object';
  }
  const message = raw as Record<string, unknown>;
  if (!versions.includes(message.v as number)) {
    return `unknown message version ${String(message.v)}`;
  }
  return message;
}

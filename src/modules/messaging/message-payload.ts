/** Shared by the message parsers: a message body must be a JSON object of version 1. */
export const ORDER_NO = /^[A-Z0-9]{8,32}$/;

export const isPositiveInt = (value: unknown): value is number =>
  typeof value === 'number' && Number.isSafeInteger(value) && value > 0;

/** The body as a version-1 JSON object, or why it is not one (it then goes to the DLQ). */
export function parseVersionedObject(content: Buffer | string): Record<string, unknown> | string {
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
  if (message.v !== 1) return `unknown message version ${String(message.v)}`;
  return message;
}

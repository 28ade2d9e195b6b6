import type { IncomingMessage } from 'node:http';

/** Whether a request declares a body (of any length above zero) that has not all arrived yet. */
export function bodyStillComing(request: IncomingMessage): boolean {
  if (request.complete) return false;
  const length = request.headers['content-length'];
  return (
    (length !== undefined && length !== '0') || request.headers['transfer-encoding'] !== undefined
  );
}

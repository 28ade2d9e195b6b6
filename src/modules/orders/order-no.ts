import { randomBytes } from 'node:crypto';

/** Time-ordered and unguessable; fits order_no's 32 characters. */
export function newOrderNo(now = Date.now()): string {
  return `SK${now}${randomBytes(8).toString('hex').toUpperCase()}`;
}

import { randomHex } from '../../common/random/random-hex.js';

/** Time-ordered and unguessable; fits order_no's 32 characters. */
export function newOrderNo(now = Date.now()): string {
  return `SK${now}${randomHex(8).toUpperCase()}`;
}

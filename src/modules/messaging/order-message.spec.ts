import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { NewOrder } from './order-message.js';
import { newOrderNo } from '../orders/order-no.js';
import { encodeOrderMessage, parseOrderMessage } from './order-message.js';

function anOrder(overrides: Partial<NewOrder> = {}): NewOrder {
  return {
    requestId: randomUUID(),
    orderNo: newOrderNo(),
    userId: 42,
    goodsId: 7,
    quantity: 2,
    acceptedAt: Date.now(),
    ...overrides,
  };
}

/** A valid wire message with some fields replaced (or removed, with undefined). */
function wire(overrides: Record<string, unknown>): string {
  return JSON.stringify({ ...(JSON.parse(encodeOrderMessage(anOrder())) as object), ...overrides });
}

describe('order message', () => {
  it('should round-trip an order through encode and parse', () => {
    const order = anOrder();

    expect(parseOrderMessage(encodeOrderMessage(order))).toEqual(order);
  });

  it('should parse a Buffer as well as a string', () => {
    const order = anOrder();

    expect(parseOrderMessage(Buffer.from(encodeOrderMessage(order)))).toEqual(order);
  });

  it('should mark the encoded message as version 1', () => {
    expect(JSON.parse(encodeOrderMessage(anOrder()))).toMatchObject({ v: 1 });
  });

  it('should accept the largest safe user id', () => {
    const order = anOrder({ userId: Number.MAX_SAFE_INTEGER });

    expect(parseOrderMessage(encodeOrderMessage(order))).toEqual(order);
  });

  it('should drop unexpected fields from the parsed order', () => {
    const order = anOrder();
    const parsed = parseOrderMessage(JSON.stringify({ v: 1, ...order, admin: true }));

    expect(parsed).toEqual(order);
  });

  it.each([
    ['non-JSON', '{not json', 'JSON'],
    ['a JSON string', '"hello"', 'object'],
    ['JSON null', 'null', 'object'],
    ['a JSON number', '42', 'object'],
  ])('should refuse %s', (_label, payload, reason) => {
    const result = parseOrderMessage(payload);

    expect(typeof result).toBe('string');
    expect(result).toContain(reason);
  });

  it.each([
    ['a missing version', { v: undefined }, 'version'],
    ['version 2', { v: 2 }, 'version'],
    ['version "1" as a string', { v: '1' }, 'version'],
    ['a requestId that is not a UUID', { requestId: 'abc' }, 'requestId'],
    ['an upper-case requestId', { requestId: randomUUID().toUpperCase() }, 'requestId'],
    ['a missing requestId', { requestId: undefined }, 'requestId'],
    ['an orderNo with lower-case letters', { orderNo: 'sk123456789' }, 'orderNo'],
    ['an orderNo too short', { orderNo: 'SK12345' }, 'orderNo'],
    ['an orderNo too long', { orderNo: 'SK' + '1'.repeat(31) }, 'orderNo'],
    ['a numeric orderNo', { orderNo: 12345678 }, 'orderNo'],
    ['a zero userId', { userId: 0 }, 'userId'],
    ['a negative userId', { userId: -1 }, 'userId'],
    ['a string userId', { userId: '42' }, 'userId'],
    ['an unsafe userId', { userId: 2 ** 53 }, 'userId'],
    ['a zero goodsId', { goodsId: 0 }, 'goodsId'],
    ['a fractional goodsId', { goodsId: 1.5 }, 'goodsId'],
    ['a zero quantity', { quantity: 0 }, 'quantity'],
    ['a negative quantity', { quantity: -3 }, 'quantity'],
    ['a missing acceptedAt', { acceptedAt: undefined }, 'acceptedAt'],
    ['a quantity MySQL would never take', { quantity: 1_001 }, 'quantity'],
    ['an acceptedAt in 1970', { acceptedAt: 1_000 }, 'acceptedAt'],
    ['an acceptedAt far in the future', { acceptedAt: Date.now() + 7 * 86_400_000 }, 'acceptedAt'],
  ])('should refuse %s', (_label, overrides, reason) => {
    const result = parseOrderMessage(wire(overrides));

    expect(typeof result).toBe('string');
    expect(result).toContain(reason);
  });
});

import { describe, expect, it } from 'vitest';
import { newOrderNo } from '../orders/order-no.js';
import {
  encodeTimeoutMessage,
  MAX_TIMEOUTS_PER_MESSAGE,
  parseTimeoutMessage,
  type OrderTimeout,
} from './timeout-message.js';

let nextGoods = 1;
const aTimeout = (): OrderTimeout => ({ orderNo: newOrderNo(), goodsId: nextGoods++ });
const timeouts = (n: number) => Array.from({ length: n }, aTimeout);

/** A version-2 message whose entries are given as they go on the wire. */
const v2 = (orders: unknown) => JSON.stringify({ v: 2, orders });

describe('timeout message', () => {
  it('should round-trip a batch of orders through encode and parse, as version 2', () => {
    const orders = timeouts(3);
    const encoded = encodeTimeoutMessage(orders);

    expect(JSON.parse(encoded)).toMatchObject({ v: 2 });
    expect(parseTimeoutMessage(encoded)).toEqual(orders);
    expect(parseTimeoutMessage(Buffer.from(encoded))).toEqual(orders);
  });

  it('should encode only the order number and goods of each order', () => {
    const order = aTimeout();
    const encoded = encodeTimeoutMessage([{ ...order, userId: 42 } as OrderTimeout]);

    expect(JSON.parse(encoded)).toEqual({ v: 2, orders: [order] });
  });

  it("should carry each order's purchase trace when it has one, and refuse one that is not a traceparent", () => {
    const traced = { ...aTimeout(), trace: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` };
    const plain = aTimeout();

    expect(parseTimeoutMessage(encodeTimeoutMessage([traced, plain]))).toEqual([traced, plain]);
    expect(parseTimeoutMessage(v2([{ ...plain, trace: 'x' }]))).toBe(
      'orders[0]: trace is not a traceparent',
    );
  });

  it('should read a version-1 message, one order, as a list of one (a rolling upgrade)', () => {
    const order = aTimeout();

    expect(parseTimeoutMessage(JSON.stringify({ v: 1, ...order }))).toEqual([order]);
  });

  it('should accept as many orders as the bound', () => {
    const orders = timeouts(MAX_TIMEOUTS_PER_MESSAGE);

    expect(parseTimeoutMessage(encodeTimeoutMessage(orders))).toEqual(orders);
  });

  it('should name an order named twice once, with its first entry', () => {
    const [a, b] = timeouts(2);

    expect(parseTimeoutMessage(v2([a, b, { ...a, goodsId: 999 }]))).toEqual([a, b]);
  });

  it('should drop unexpected fields from the parsed orders', () => {
    const order = aTimeout();

    expect(parseTimeoutMessage(v2([{ ...order, admin: true }]))).toEqual([order]);
  });

  it.each([
    ['non-JSON', '{not json', 'JSON'],
    ['a JSON list', '[]', 'object'],
    ['JSON null', 'null', 'object'],
    ['a missing version', JSON.stringify({ orders: [aTimeout()] }), 'version'],
    ['version 3', JSON.stringify({ v: 3, orders: [aTimeout()] }), 'version'],
    ['version "2" as a string', JSON.stringify({ v: '2', orders: [aTimeout()] }), 'version'],
    [
      'version 1 with a malformed orderNo',
      JSON.stringify({ v: 1, orderNo: 'sk1', goodsId: 1 }),
      'orderNo',
    ],
    ['version 1 without goodsId', JSON.stringify({ v: 1, orderNo: newOrderNo() }), 'goodsId'],
    ['version 1 carrying a list', JSON.stringify({ v: 1, orders: [aTimeout()] }), 'orderNo'],
    ['version 2 without orders', JSON.stringify({ v: 2, ...aTimeout() }), 'orders is not a list'],
    ['version 2 with orders as an object', v2({ 0: aTimeout() }), 'orders is not a list'],
    ['an empty list', v2([]), 'orders is empty'],
    ['a list above the bound', v2(timeouts(MAX_TIMEOUTS_PER_MESSAGE + 1)), 'more than 1000'],
    ['an entry that is not an object', v2([aTimeout(), 'SK1234567890']), 'orders[1] is not'],
    ['an entry that is null', v2([null]), 'orders[0] is not'],
    [
      'a lower-case orderNo',
      v2([aTimeout(), { orderNo: 'sk123456789', goodsId: 1 }]),
      'orders[1]: orderNo',
    ],
    ['an orderNo too short', v2([{ orderNo: 'SK12345', goodsId: 1 }]), 'orders[0]: orderNo'],
    ['a numeric orderNo', v2([{ orderNo: 12345678, goodsId: 1 }]), 'orders[0]: orderNo'],
    ['a zero goodsId', v2([{ orderNo: newOrderNo(), goodsId: 0 }]), 'orders[0]: goodsId'],
    ['a fractional goodsId', v2([{ orderNo: newOrderNo(), goodsId: 1.5 }]), 'orders[0]: goodsId'],
    ['a string goodsId', v2([{ orderNo: newOrderNo(), goodsId: '7' }]), 'orders[0]: goodsId'],
    [
      'one bad entry among good ones',
      v2([...timeouts(5), { orderNo: newOrderNo() }]),
      'orders[5]: goodsId',
    ],
  ])('should refuse %s', (_label, payload, reason) => {
    const result = parseTimeoutMessage(payload);

    expect(typeof result).toBe('string');
    expect(result).toContain(reason);
  });
});

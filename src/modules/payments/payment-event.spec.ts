import { describe, expect, it } from 'vitest';
import { amountInMinorUnits, readPaymentEvent } from './payment-event.js';

const valid = {
  id: 'evt_1',
  type: 'payment.succeeded',
  data: { orderNo: 'SK17644000000001A2B3C', amount: 19900, currency: 'CNY', extra: true },
  created: 1_800_000_000,
};

describe('readPaymentEvent', () => {
  it('should read the contract fields of an event and leave the ones it does not know', () => {
    expect(readPaymentEvent(valid)).toEqual({
      id: 'evt_1',
      type: 'payment.succeeded',
      data: { orderNo: 'SK17644000000001A2B3C', amount: 19900, currency: 'CNY' },
    });
  });

  it('should refuse each malformed field with VALIDATION_FAILED naming it', () => {
    const cases: [unknown, RegExp][] = [
      [null, /JSON object/],
      [[], /JSON object/],
      [{ ...valid, id: '' }, /^id/],
      [{ ...valid, id: 'x'.repeat(65) }, /^id/],
      [{ ...valid, type: 'payment.refunded' }, /^type/],
      [{ ...valid, data: 'x' }, /^data must/],
      [{ ...valid, data: { ...valid.data, orderNo: 'SK/../1' } }, /^data.orderNo/],
      [{ ...valid, data: { ...valid.data, amount: 1.5 } }, /^data.amount/],
      [{ ...valid, data: { ...valid.data, amount: -1 } }, /^data.amount/],
      [{ ...valid, data: { ...valid.data, amount: '19900' } }, /^data.amount/],
      [{ ...valid, data: { ...valid.data, currency: 'cny' } }, /^data.currency/],
    ];
    for (const [body, message] of cases) {
      expect(() => readPaymentEvent(body)).toThrow(
        expect.objectContaining({
          code: 'VALIDATION_FAILED',
          message: expect.stringMatching(message),
        }),
      );
    }
  });
});

describe('amountInMinorUnits', () => {
  it('should multiply a decimal price exactly, in cents', () => {
    expect(amountInMinorUnits('199.00', 1)).toBe(19_900);
    expect(amountInMinorUnits('0.10', 3)).toBe(30);
    expect(amountInMinorUnits('19.9', 2)).toBe(3_980);
    expect(amountInMinorUnits('7', 1)).toBe(700);
    expect(amountInMinorUnits('0.29', 100)).toBe(2_900);
  });
});

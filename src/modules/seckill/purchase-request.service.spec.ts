import { describe, expect, it, vi } from 'vitest';
import { DomainError, UnavailableError } from '../../common/errors/domain-error.js';
import type { SeckillConfig } from '../../config/seckill.config.js';
import type { IdempotencyService } from './idempotency.service.js';
import { PurchaseRequestService } from './purchase-request.service.js';
import type { PurchaseTokenService } from './purchase-token.service.js';
import type { PurchaseService } from './purchase.service.js';

function setup(outcome: () => Promise<unknown>) {
  const purchases = { purchase: vi.fn(outcome) };
  const tokens = { check: vi.fn(async () => undefined), spend: vi.fn(async () => undefined) };
  const service = new PurchaseRequestService(
    purchases as unknown as PurchaseService,
    tokens as unknown as PurchaseTokenService,
    {} as IdempotencyService,
    { requireToken: true } as SeckillConfig,
  );
  const submit = () => service.submit(1, 7, 1, { token: 't' });
  return { purchases, tokens, submit };
}

describe('PurchaseRequestService with purchase tokens', () => {
  it('should spend the token when the purchase is accepted', async () => {
    const { tokens, submit } = setup(async () => ({ status: 'QUEUED', requestId: 'r' }));
    await expect(submit()).resolves.toEqual({ status: 'QUEUED', requestId: 'r' });
    expect(tokens.spend).toHaveBeenCalledWith(1, 7, 't');
  });

  it.each(['SOLD_OUT', 'ALREADY_PURCHASED', 'SALE_ENDED'] as const)(
    'should spend the token on the final answer %s',
    async (code) => {
      const { tokens, submit } = setup(async () => Promise.reject(new DomainError(code, 'x')));
      await expect(submit()).rejects.toMatchObject({ code });
      expect(tokens.spend).toHaveBeenCalledTimes(1);
    },
  );

  it.each([
    ['a 503', new UnavailableError('down')],
    ['DUPLICATE_REQUEST', new DomainError('DUPLICATE_REQUEST', 'x')],
    ['NOT_PREHEATED', new DomainError('NOT_PREHEATED', 'x')],
    ['an unexpected error', new Error('boom')],
  ])('should leave the token unspent after %s', async (_name, error) => {
    const { tokens, submit } = setup(async () => Promise.reject(error));
    await expect(submit()).rejects.toBe(error);
    expect(tokens.spend).not.toHaveBeenCalled();
  });

  it('should not purchase when the token check refuses', async () => {
    const { purchases, tokens, submit } = setup(async () => ({
      status: 'QUEUED',
      requestId: 'r',
    }));
    tokens.check.mockRejectedValueOnce(new DomainError('FORBIDDEN', 'used'));
    await expect(submit()).rejects.toMatchObject({ code: 'FORBIDDEN' });
    expect(purchases.purchase).not.toHaveBeenCalled();
    expect(tokens.spend).not.toHaveBeenCalled();
  });
});

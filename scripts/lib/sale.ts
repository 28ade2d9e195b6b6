// Opening a sale through the server's admin routes, as an operator would.
import { ScriptError } from './errors.js';
import { expectStatus, nonNegativeIntegerField, requestJson } from './http.js';

export interface SaleSpec {
  name: string;
  price: number;
  stock: number;
  /** Redis buckets the stock is split over; the server's STOCK_SHARDS when left out. */
  stockShards?: number;
  /** A queue sale (its waiting room opens 15 minutes before the start, the default). */
  admission?: 'open' | 'queue';
  admitPerSecond?: number;
  admissionTtlSeconds?: number;
}

/** Creates the goods, on sale from a second ago for an hour; returns its id. */
export async function createGoods(
  baseUrl: string,
  adminToken: string,
  sale: SaleSpec,
): Promise<number> {
  const now = Date.now();
  const response = await requestJson('POST', `${baseUrl}/api/v1/admin/goods`, {
    token: adminToken,
    body: {
      ...sale,
      // A second in the past so the sale is already open when the load starts.
      startAt: new Date(now - 1_000).toISOString(),
      endAt: new Date(now + 3_600_000).toISOString(),
      perUserLimit: 1,
    },
  });
  expectStatus('create goods', response, 201);
  const id = nonNegativeIntegerField(response.body, 'id');
  if (id === undefined || id === 0)
    throw new ScriptError(`create goods: no id in ${JSON.stringify(response.body)}`);
  return id;
}

export async function preheatGoods(
  baseUrl: string,
  adminToken: string,
  goodsId: number,
): Promise<void> {
  const response = await requestJson('POST', `${baseUrl}/api/v1/admin/goods/${goodsId}/preheat`, {
    token: adminToken,
  });
  expectStatus('preheat goods', response, 200);
}

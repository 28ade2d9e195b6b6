// Opening a sale through the server's admin routes, as an operator would.
import { ScriptError } from './errors.js';
import { expectStatus, nonNegativeIntegerField, requestJson } from './http.js';

export interface SaleSpec {
  name: string;
  price: number;
  stock: number;
  /** Redis buckets the stock is split over; the server's STOCK_SHARDS when left out. */
  stockShards?: number;
  /** A queue sale (its waiting room opens 15 minutes before the start, the default), or a draw. */
  admission?: 'open' | 'queue' | 'draw';
  admitPerSecond?: number;
  admissionTtlSeconds?: number;
  /** A draw sale: its entry window, how long a right lasts, rights per unit (1 unless given). */
  entriesOpenAt?: Date;
  entriesCloseAt?: Date;
  claimSeconds?: number;
  winnersFactor?: number;
  /** When the sale starts: a second ago unless given. */
  startAt?: Date;
  /** When a queue sale's waiting room opens (15 minutes before the start unless given). */
  queueOpensAt?: Date;
  /** When the sale ends: an hour after its start unless given. */
  endAt?: Date;
  /** The most one buyer may buy (1 unless given). */
  perUserLimit?: number;
}

/** Creates the goods, on sale from its start (a second ago unless given) to its end (an hour later unless given); returns its id. */
export async function createGoods(
  baseUrl: string,
  adminToken: string,
  sale: SaleSpec,
): Promise<number> {
  // By default a second in the past, so the sale is already open when the load starts.
  const {
    startAt = new Date(Date.now() - 1_000),
    queueOpensAt,
    entriesOpenAt,
    entriesCloseAt,
    endAt = new Date(startAt.getTime() + 3_600_000),
    perUserLimit = 1,
    ...rest
  } = sale;
  const response = await requestJson('POST', `${baseUrl}/api/v1/admin/goods`, {
    token: adminToken,
    body: {
      ...rest,
      startAt: startAt.toISOString(),
      endAt: endAt.toISOString(),
      ...(queueOpensAt === undefined ? {} : { queueOpensAt: queueOpensAt.toISOString() }),
      ...(entriesOpenAt === undefined ? {} : { entriesOpenAt: entriesOpenAt.toISOString() }),
      ...(entriesCloseAt === undefined ? {} : { entriesCloseAt: entriesCloseAt.toISOString() }),
      perUserLimit,
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

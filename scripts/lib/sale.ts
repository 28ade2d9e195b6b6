// Opening a sale through the server's admin routes, as an operator would.
import { ScriptError } from './errors.js';
import { expectStatus, isRecord, nonNegativeIntegerField, requestJson } from './http.js';

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

/** How long a preheat answered 503 (nothing changed: come back) is asked again, at most. */
const PREHEAT_RETRY_MS = 30_000;
const PREHEAT_RETRY_AFTER_MS = { min: 250, max: 6_000 };

/**
 * Preheats the goods. A 503 means nothing changed and to come back (a queue or draw sale's room
 * being restored by the admission job at that very moment): asked again, as an operator would,
 * after its Retry-After, for PREHEAT_RETRY_MS at most.
 */
export async function preheatGoods(
  baseUrl: string,
  adminToken: string,
  goodsId: number,
): Promise<void> {
  const until = Date.now() + PREHEAT_RETRY_MS;
  for (;;) {
    const response = await requestJson('POST', `${baseUrl}/api/v1/admin/goods/${goodsId}/preheat`, {
      token: adminToken,
    });
    if (response.status !== 503 || Date.now() >= until) {
      expectStatus('preheat goods', response, 200);
      return;
    }
    const told =
      isRecord(response.body) && typeof response.body.retryAfterSeconds === 'number'
        ? response.body.retryAfterSeconds * 1_000
        : PREHEAT_RETRY_AFTER_MS.min;
    const { min, max } = PREHEAT_RETRY_AFTER_MS;
    await new Promise((resolve) => setTimeout(resolve, Math.min(max, Math.max(min, told))));
  }
}

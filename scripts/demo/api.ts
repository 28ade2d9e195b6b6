// The demo's calls to the server's own routes: create the goods, read it back, reconcile.
import { expectStatus, isRecord, nonNegativeIntegerField, requestJson } from '../lib/http.js';
import { createGoods } from '../lib/sale.js';
import { DemoError } from './options.js';

/** The demo's goods' price: what the fake provider charges per unit. */
export const DEMO_PRICE = 4999;

/** The demo's goods: one phone model, `stock` units. */
export function createDemoGoods(baseUrl: string, adminToken: string, stock: number) {
  return createGoods(baseUrl, adminToken, { name: 'Demo phone', price: DEMO_PRICE, stock });
}

export async function fetchRedisRemaining(
  baseUrl: string,
  goodsId: number,
): Promise<number | undefined> {
  const response = await requestJson('GET', `${baseUrl}/api/v1/goods/${goodsId}`);
  expectStatus('get goods', response, 200);
  return nonNegativeIntegerField(response.body, 'remaining');
}

/** The parts of the admin reconcile answer that the demo reports; the order counts it reads from MySQL. */
export interface Reconcile {
  consistent: boolean;
  /** null when Redis does not hold the sale. */
  redisDrift: number | null;
  dbDrift: number;
  inFlight: number;
}

export function integerField(body: unknown, field: string): number | undefined {
  const raw = isRecord(body) ? body[field] : undefined;
  return typeof raw === 'number' && Number.isSafeInteger(raw) ? raw : undefined;
}

export function parseReconcile(body: unknown): Reconcile | undefined {
  if (!isRecord(body) || typeof body.consistent !== 'boolean') return undefined;
  const drift = body.drift;
  const redisDrift = isRecord(drift) && drift.redis === null ? null : integerField(drift, 'redis');
  const dbDrift = integerField(drift, 'db');
  const inFlight = nonNegativeIntegerField(body, 'inFlight');
  if (redisDrift === undefined || dbDrift === undefined || inFlight === undefined) return undefined;
  return { consistent: body.consistent, redisDrift, dbDrift, inFlight };
}

export async function fetchReconcile(
  baseUrl: string,
  adminToken: string,
  goodsId: number,
): Promise<Reconcile> {
  const response = await requestJson('GET', `${baseUrl}/api/v1/admin/goods/${goodsId}/reconcile`, {
    token: adminToken,
  });
  expectStatus('reconcile', response, 200);
  const reconcile = parseReconcile(response.body);
  if (reconcile === undefined)
    throw new DemoError(`reconcile: unexpected answer ${JSON.stringify(response.body)}`);
  return reconcile;
}

// The demo's reads of MySQL: orders, stock, statuses, deadlines.
import { setTimeout as sleep } from 'node:timers/promises';

import { createConnection, type Connection, type RowDataPacket } from 'mysql2/promise';

import { onCleanup } from '../lib/cleanup.js';
import { describeError } from '../lib/load.js';
import { DEFAULT_DATABASE_URL, DemoError } from './options.js';

const POLL_INTERVAL_MS = 100;

export interface OrderCountRow extends RowDataPacket {
  n: number | string;
  q: number | string;
  active: number | string;
}

export interface StockRow extends RowDataPacket {
  total_stock: number;
  stock: number;
}

export interface UserRow extends RowDataPacket {
  user_id: number;
}

export interface OrderCounts {
  orders: number;
  quantity: number;
  /** Quantity of orders that still hold stock; equals `quantity` unless something was cancelled. */
  activeQuantity: number;
}

export interface DrainResult {
  counts: OrderCounts;
  drained: boolean;
  drainMs: number;
}

export async function countOrders(db: Connection, goodsId: number): Promise<OrderCounts> {
  // SUM() comes back as a DECIMAL string from mysql2, hence Number().
  const [rows] = await db.query<OrderCountRow[]>(
    `SELECT COUNT(*) n, COALESCE(SUM(quantity),0) q,
            COALESCE(SUM(CASE WHEN status IN ('PENDING_PAYMENT', 'PAID') THEN quantity ELSE 0 END),0) active
       FROM seckill_order WHERE goods_id = ?`,
    [goodsId],
  );
  const row = rows[0];
  return {
    orders: Number(row?.n ?? 0),
    quantity: Number(row?.q ?? 0),
    activeQuantity: Number(row?.active ?? 0),
  };
}

export async function waitForDrain(
  db: Connection,
  goodsId: number,
  accepted: number,
  burstEndedAt: number,
  timeoutSeconds: number,
): Promise<DrainResult> {
  const deadline = burstEndedAt + timeoutSeconds * 1000;
  for (;;) {
    const counts = await countOrders(db, goodsId);
    const now = performance.now();
    // More rows than 202s is a bug, not a reason to keep waiting; the invariants report it.
    if (counts.orders >= accepted) return { counts, drained: true, drainMs: now - burstEndedAt };
    if (now >= deadline) return { counts, drained: false, drainMs: now - burstEndedAt };
    await sleep(POLL_INTERVAL_MS);
  }
}

export async function readStock(db: Connection, goodsId: number): Promise<StockRow> {
  const [rows] = await db.query<StockRow[]>(
    'SELECT total_stock, stock FROM seckill_goods WHERE id = ?',
    [goodsId],
  );
  const row = rows[0];
  if (row === undefined) throw new DemoError(`goods ${goodsId} not found in MySQL`);
  return { ...row, total_stock: Number(row.total_stock), stock: Number(row.stock) };
}

export async function readDuplicateBuyers(db: Connection, goodsId: number): Promise<number[]> {
  const [rows] = await db.query<UserRow[]>(
    `SELECT user_id FROM seckill_order WHERE goods_id = ? AND status IN ('PENDING_PAYMENT', 'PAID')
      GROUP BY user_id HAVING COUNT(*) > 1`,
    [goodsId],
  );
  return rows.map((row) => Number(row.user_id));
}

export const ORDER_STATUSES = ['PENDING_PAYMENT', 'PAID', 'CANCELLED', 'REFUND_REQUIRED'] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export interface OrderRow extends RowDataPacket {
  order_no: string;
  user_id: number | string;
}

export interface StatusCountRow extends RowDataPacket {
  status: string;
  n: number | string;
  q: number | string;
}

export interface DeadlineRow extends RowDataPacket {
  deadline_ms: number | string | null;
}

export interface OrderRef {
  orderNo: string;
  userId: number;
}

export interface StatusCount {
  orders: number;
  quantity: number;
}

export type StatusCounts = Record<OrderStatus, StatusCount>;

export function isOrderStatus(value: string): value is OrderStatus {
  return (ORDER_STATUSES as readonly string[]).includes(value);
}

export async function readOrders(db: Connection, goodsId: number): Promise<OrderRef[]> {
  const [rows] = await db.query<OrderRow[]>(
    'SELECT order_no, user_id FROM seckill_order WHERE goods_id = ? ORDER BY id',
    [goodsId],
  );
  return rows.map((row) => ({ orderNo: row.order_no, userId: Number(row.user_id) }));
}

export async function countByStatus(db: Connection, goodsId: number): Promise<StatusCounts> {
  const [rows] = await db.query<StatusCountRow[]>(
    `SELECT status, COUNT(*) n, COALESCE(SUM(quantity),0) q
       FROM seckill_order WHERE goods_id = ? GROUP BY status`,
    [goodsId],
  );
  // Every status present, so that a status with no orders reads as 0 rather than missing.
  const counts: StatusCounts = {
    PENDING_PAYMENT: { orders: 0, quantity: 0 },
    PAID: { orders: 0, quantity: 0 },
    CANCELLED: { orders: 0, quantity: 0 },
    REFUND_REQUIRED: { orders: 0, quantity: 0 },
  };
  for (const row of rows) {
    if (isOrderStatus(row.status)) {
      counts[row.status] = { orders: Number(row.n), quantity: Number(row.q) };
    }
  }
  return counts;
}

/**
 * The latest payment deadline among the goods' unpaid orders, in epoch ms (undefined when none
 * is unpaid). The server writes expire_at in UTC; the arithmetic is done on the DATETIME itself,
 * so that neither this connection's nor MySQL's time zone can shift it.
 */
export async function readPaymentDeadline(
  db: Connection,
  goodsId: number,
): Promise<number | undefined> {
  const [rows] = await db.query<DeadlineRow[]>(
    `SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', MAX(expire_at)) DIV 1000 deadline_ms
       FROM seckill_order WHERE goods_id = ? AND status = 'PENDING_PAYMENT'`,
    [goodsId],
  );
  const raw = rows[0]?.deadline_ms;
  return raw === null || raw === undefined ? undefined : Number(raw);
}

export async function connectMysql(): Promise<Connection> {
  const url = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
  try {
    const db = await createConnection(url);
    onCleanup(() => db.end());
    return db;
  } catch (error) {
    throw new DemoError(
      `cannot connect to MySQL at ${url.replace(/:[^:@/]*@/, ':***@')}: ${describeError(error)}`,
    );
  }
}

// What the buyers and the operator saw: one entry per request and its answer, in history.jsonl.
import { createWriteStream, type WriteStream } from 'node:fs';

export type Operation =
  'purchase' | 'result' | 'pay' | 'cancel' | 'repair' | 'join' | 'queue' | 'webhook';

/**
 * What an answer says about the stock: `taken` (a 202: an order must follow), `refused` (the
 * contract says nothing was taken: a 409, a 429, a 503 without a request id, a refused
 * connection), `unknown` (no answer, or a 503 that carries the purchase's request id: it may end
 * either way). Answers to other operations are `taken` when they succeeded.
 */
export type Outcome = 'taken' | 'refused' | 'unknown';

export interface HistoryEntry {
  /** The client's own number for the request, in the order they were sent. */
  id: number;
  op: Operation;
  /** The user id the request was made as (1, the admin, for a repair). */
  buyer: number;
  goodsId: number;
  /** Which app instance it went to. */
  instance: string;
  /** Milliseconds since the run started (the same clock as the schedule's faults). */
  sentMs: number;
  answeredMs: number;
  /** 0 when no answer came (refused, reset, timed out). */
  status: number;
  /** The error body's code, or the network error's (ECONNREFUSED, TIMEOUT, …). */
  code?: string;
  outcome: Outcome;
  /** The purchase's id, as the answer gave it (a 202, a 503 of unknown outcome, a result). */
  requestId?: string;
  /** The order a result named, or the order paid or cancelled. */
  orderNo?: string;
  /** A result's `status` (NONE, QUEUED, SUCCESS, FAILED) and its `reason`. */
  resultStatus?: string;
  reason?: string;
  idempotencyKey?: string;
  /** A purchase made after the heal to measure when each sale reopened. */
  probe?: true;
  /** A queue standing's `state` (NOT_JOINED, WAITING, ADMITTED, …). */
  queueState?: string;
  /** A WAITING standing's `position` (1 for the next admitted: its place less the head). */
  position?: number;
  /** A join's receipt (what its place in the draw is checked with), as answered. */
  receipt?: { joinIndex: number | null; pseudonym: string; seedCommitment: string };
  /** A queue standing's `final` (the state can no longer change). */
  final?: boolean;
  /** An ADMITTED standing's `admittedUntil`, on the wall clock (ms since the epoch). */
  admittedUntilEpochMs?: number;
  /** A purchase shed (503 OVERLOADED): the Retry-After it was told, in seconds. */
  retryAfterS?: number;
  /** A purchase's quantity, when above 1. */
  quantity?: number;
  /** A purchase in a queue sale by a buyer who never joined its waiting room. */
  outsider?: true;
  /** A repair's answer: the reading it found had drifted, unexplained by restocks under way. */
  drifted?: boolean;
  /** A purchase after the quiet, by a buyer of its own, of a sale both stores say has units. */
  undersell?: { mysqlStock: number; redisStock: number };
  /** A result read after the quiet for the buyer's latest purchase, left unknown: its entry's id. */
  truthOf?: number;
  /** A provider's webhook delivery: its event, and the order status a 200 answered. */
  webhook?: {
    eventId: string;
    type: 'payment.started' | 'payment.succeeded' | 'payment.failed';
    /** Sent after the order's deadline, on purpose (a late payment). */
    late: boolean;
    /** A second delivery of an event sent before. */
    repeat: boolean;
    answered?: string;
  };
}

/** Reads what a purchase answer says was taken. */
export function purchaseOutcome(status: number, code: string | undefined, body: unknown): Outcome {
  if (status === 202) return 'taken';
  if (status === 0) return code === 'ECONNREFUSED' ? 'refused' : 'unknown';
  if (status === 503) return requestIdOf(body) === undefined ? 'refused' : 'unknown';
  // A 500 (or a gateway's 502/504) promises nothing either way.
  return status >= 500 ? 'unknown' : 'refused';
}

export function requestIdOf(body: unknown): string | undefined {
  const id = field(body, 'requestId');
  return typeof id === 'string' ? id : undefined;
}

export function field(body: unknown, name: string): unknown {
  return typeof body === 'object' && body !== null
    ? (body as Record<string, unknown>)[name]
    : undefined;
}

/** The history as it grows: kept in memory for the checker and appended to history.jsonl. */
export class History {
  readonly entries: HistoryEntry[] = [];
  private nextId = 1;
  private readonly file: WriteStream;

  constructor(path: string) {
    this.file = createWriteStream(path, { flags: 'w' });
  }

  /** A number for a request about to be sent. */
  take(): number {
    return this.nextId++;
  }

  record(entry: HistoryEntry): void {
    this.entries.push(entry);
    this.file.write(`${JSON.stringify(entry)}\n`);
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.file.end(resolve));
  }
}

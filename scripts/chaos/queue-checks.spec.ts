import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';

import { drawSeed, pseudonymOf, seedCommitment } from '../../src/modules/queue-journal/fairness.js';
import { PreQueueDigest } from '../../src/modules/waiting-room/pre-queue-digest.js';
import { queueOrder as queueOrderOf } from '../../src/modules/waiting-room/queue-order.js';

import type { InvariantName, SaleSnapshot, Violation } from './checker.js';
import type { HistoryEntry } from './history.js';
import {
  checkQueues,
  finalDeadline,
  type FaultSpan,
  type QueueCheckInput,
  type QueueFacts,
  type QueueJournalSnapshot,
} from './queue-checks.js';
import { queueOrder } from './queue-order.js';

const START = 1_760_000_000_000;
const GOODS = 9;
const TTL_MS = 3_000;
let nextId = 1;

function entry(fields: Partial<HistoryEntry> & Pick<HistoryEntry, 'op' | 'buyer'>): HistoryEntry {
  const sentMs = fields.sentMs ?? 1_000;
  return {
    id: nextId++,
    goodsId: GOODS,
    instance: 'api-1',
    sentMs,
    answeredMs: sentMs + 20,
    status: 200,
    outcome: 'taken',
    ...fields,
  };
}

const read = (
  buyer: number,
  sentMs: number,
  queueState: string,
  final = false,
  op: 'join' | 'queue' = 'queue',
) => entry({ op, buyer, sentMs, queueState, final });
const join = (buyer: number, sentMs: number) => read(buyer, sentMs, 'WAITING', false, 'join');
const bought = (buyer: number, sentMs: number, status = 202) =>
  entry({
    op: 'purchase',
    buyer,
    sentMs,
    status,
    outcome: status === 202 ? 'taken' : 'refused',
    ...(status === 202 ? { requestId: `r-${buyer}-${sentMs}` } : { code: 'NOT_ADMITTED' }),
  });

function sale(fields: Partial<SaleSnapshot> = {}): SaleSnapshot {
  return {
    goodsId: GOODS,
    name: 'queued',
    totalStock: 10,
    mysqlStock: 5,
    orders: [],
    redisStock: 5,
    redisBuyers: {},
    restocked: [],
    reconcile: { consistent: true },
    ...fields,
  };
}

function facts(fields: Partial<QueueFacts> = {}): QueueFacts {
  return {
    sales: [
      {
        goodsId: GOODS,
        name: 'queued',
        startMs: 5_000,
        endMs: 20_000,
        admitPerSecond: 4,
        admissionTtlMs: TTL_MS,
      },
    ],
    admissions: [],
    rooms: [{ goodsId: GOODS, admitted: {}, expired: [] }],
    roomSamples: [],
    journals: [],
    faults: [],
    healedMs: 45_000,
    toldMs: 70_000,
    ...fields,
  };
}

function judge(input: Partial<QueueCheckInput> & { history: HistoryEntry[] }) {
  const checked = new Map<InvariantName, number>();
  const violations: Violation[] = [];
  checkQueues(
    {
      queue: facts(),
      sales: [sale()],
      quietReached: true,
      startedAtEpochMs: START,
      ...input,
    },
    {
      checked: (name, count = 1) => checked.set(name, (checked.get(name) ?? 0) + count),
      violate: (violation) => violations.push(violation),
    },
  );
  const of = (name: InvariantName) => violations.filter((v) => v.invariant === name);
  return { checked: (name: InvariantName) => checked.get(name) ?? 0, of };
}

const fault = (from: number, to: number, kind = 'proxy-cut', redisData = false): FaultSpan => ({
  from,
  to,
  what: kind,
  kind,
  redisData,
  stopsClock: kind !== 'broker-close',
});

describe('queue-admitted-purchase', () => {
  it('accepts a purchase after the buyer read ADMITTED', () => {
    const verdict = judge({
      history: [join(11, 1_000), read(11, 6_000, 'ADMITTED'), bought(11, 6_500)],
    });
    expect(verdict.checked('queue-admitted-purchase')).toBe(1);
    expect(verdict.of('queue-admitted-purchase')).toEqual([]);
  });

  it('names a 202 for a buyer whose last standing said WAITING and who was never admitted', () => {
    const purchase = bought(12, 6_500);
    const verdict = judge({ history: [join(12, 1_000), read(12, 6_000, 'WAITING'), purchase] });
    const [violation] = verdict.of('queue-admitted-purchase');
    expect(violation.historyIds).toContain(purchase.id);
    expect(violation.message).toContain('WAITING');
  });

  it('accepts a buyer admitted between its last read and the purchase, by the room in Redis', () => {
    // Admitted at 6,200 ms (until 9,200 ms, used: negative), the purchase answered at 6,520.
    const verdict = judge({
      history: [join(13, 1_000), read(13, 6_000, 'WAITING'), bought(13, 6_500)],
      queue: facts({
        rooms: [{ goodsId: GOODS, admitted: { '13': -(START + 6_200 + TTL_MS) }, expired: [] }],
      }),
    });
    expect(verdict.of('queue-admitted-purchase')).toEqual([]);
    expect(verdict.checked('queue-admitted-purchase')).toBe(1);
  });

  it('does not take an admission the room gave after the purchase as evidence', () => {
    const verdict = judge({
      history: [join(14, 1_000), read(14, 6_000, 'WAITING'), bought(14, 6_500)],
      queue: facts({
        rooms: [{ goodsId: GOODS, admitted: { '14': START + 9_000 + TTL_MS }, expired: [] }],
      }),
    });
    expect(verdict.of('queue-admitted-purchase')).toHaveLength(1);
  });

  it('names a 202 after the admission lapsed (EXPIRED read since ADMITTED)', () => {
    const verdict = judge({
      history: [
        join(15, 1_000),
        read(15, 6_000, 'ADMITTED'),
        read(15, 9_500, 'EXPIRED', true),
        bought(15, 10_000),
      ],
    });
    expect(verdict.of('queue-admitted-purchase')).toHaveLength(1);
  });

  it('names a 202 sent well past the admittedUntil its ADMITTED read gave, unless a fault could stop the clock', () => {
    const admitted = entry({
      op: 'queue',
      buyer: 16,
      sentMs: 6_000,
      queueState: 'ADMITTED',
      admittedUntilEpochMs: START + 9_000,
    });
    const late = bought(16, 10_500);
    // The room still holds the admission (unswept, say): the lapse is judged all the same.
    const rooms = [{ goodsId: GOODS, admitted: { '16': -(START + 9_000) }, expired: [] }];
    const verdict = judge({ history: [join(16, 1_000), admitted, late], queue: facts({ rooms }) });
    const [violation] = verdict.of('queue-admitted-purchase');
    expect(violation.message).toContain('lapsed at 9000 ms');
    expect(violation.historyIds).toEqual([admitted.id, late.id]);
    // Within a second of it, or with Redis paused in between (a stopped clock), it is no lapse.
    const inTime = judge({
      history: [join(16, 1_000), admitted, bought(16, 9_800)],
      queue: facts({ rooms }),
    });
    expect(inTime.of('queue-admitted-purchase')).toEqual([]);
    const paused = judge({
      history: [join(16, 1_000), admitted, late],
      queue: facts({ rooms, faults: [fault(7_000, 8_000, 'redis-pause')] }),
    });
    expect(paused.of('queue-admitted-purchase')).toEqual([]);
  });

  it('names a 202 sent after the buyer was told EXPIRED, unless Redis lost the room since', () => {
    const admitted = read(17, 6_000, 'ADMITTED');
    const expired = read(17, 9_500, 'EXPIRED', true);
    const late = bought(17, 9_800);
    // The room still holds the admission, given before the purchase: EXPIRED was final all the same.
    const rooms = [{ goodsId: GOODS, admitted: { '17': -(START + 5_000 + TTL_MS) }, expired: [] }];
    const history = [join(17, 1_000), admitted, expired, late];
    const verdict = judge({
      history,
      queue: facts({ rooms, faults: [fault(7_000, 8_000, 'redis-pause')] }),
    });
    const [violation] = verdict.of('queue-admitted-purchase');
    expect(violation.message).toContain('told its admission had lapsed');
    expect(violation.historyIds).toEqual([expired.id, late.id]);
    // Told EXPIRED only after the purchase was sent: no evidence against it.
    const before = judge({
      history: [join(17, 1_000), admitted, bought(17, 9_400), expired],
      queue: facts({ rooms }),
    });
    expect(before.of('queue-admitted-purchase')).toEqual([]);
    const lost = judge({
      history,
      queue: facts({ rooms, faults: [fault(9_600, 9_700, 'redis-kill', true)] }),
    });
    expect(lost.of('queue-admitted-purchase')).toEqual([]);
    // A loss healed well before the EXPIRED read excuses nothing: the room that told it was
    // the restored one.
    const healed = judge({
      history,
      queue: facts({ rooms, faults: [fault(4_000, 5_000, 'redis-kill', true)] }),
    });
    expect(healed.of('queue-admitted-purchase')).toHaveLength(1);
  });

  it('leaves unjudged a purchase without evidence once Redis lost the room after it', () => {
    const verdict = judge({
      history: [join(16, 1_000), read(16, 6_000, 'WAITING'), bought(16, 6_500)],
      queue: facts({ faults: [fault(8_000, 9_000, 'redis-kill', true)] }),
    });
    expect(verdict.of('queue-admitted-purchase')).toEqual([]);
    expect(verdict.checked('queue-admitted-purchase')).toBe(0);
  });

  it('judges such a purchase all the same when the admissions log shows nobody admitted meanwhile', () => {
    const history = [join(18, 1_000), read(18, 6_000, 'WAITING'), bought(18, 6_500)];
    const loss = fault(9_000, 10_000, 'redis-kill', true);
    const verdict = judge({ history, queue: facts({ faults: [loss] }) });
    expect(verdict.of('queue-admitted-purchase')).toHaveLength(1);
    const admitting = facts({
      faults: [loss],
      admissions: [{ goodsId: GOODS, member: '0:1', count: 1, atEpochMs: START + 6_300 }],
    });
    expect(judge({ history, queue: admitting }).checked('queue-admitted-purchase')).toBe(0);
  });

  it('checks nothing in a run without a purchase accepted in the queue sale', () => {
    const verdict = judge({ history: [join(17, 1_000), bought(17, 2_000, 403)] });
    expect(verdict.checked('queue-admitted-purchase')).toBe(0);
  });
});

describe('queue-pace', () => {
  const at = (member: string, ms: number) => ({
    goodsId: GOODS,
    member,
    count: Number(member.split(':')[1]),
    atEpochMs: START + ms,
  });

  it('counts every admission batch, and accepts the pace held over any 1,000 ms', () => {
    const verdict = judge({
      history: [],
      queue: facts({ admissions: [at('0:4', 5_000), at('4:4', 6_000), at('8:2', 7_000)] }),
    });
    expect(verdict.checked('queue-pace')).toBe(3);
    expect(verdict.of('queue-pace')).toEqual([]);
  });

  it('names more admissions than admitPerSecond within 1,000 ms', () => {
    const verdict = judge({
      history: [],
      queue: facts({ admissions: [at('0:4', 5_000), at('4:4', 5_100), at('8:4', 5_900)] }),
    });
    const found = verdict.of('queue-pace');
    expect(found).toHaveLength(1);
    expect(found[0].message).toContain('8 admissions');
  });

  it('does not add a log that Redis lost to the next one', () => {
    const verdict = judge({
      history: [],
      queue: facts({
        admissions: [at('0:4', 5_000), at('0:4', 5_800)],
        faults: [fault(5_200, 5_500, 'redis-kill', true)],
      }),
    });
    expect(verdict.checked('queue-pace')).toBe(2);
    expect(verdict.of('queue-pace')).toEqual([]);
  });

  it('checks nothing when nobody was admitted', () => {
    expect(judge({ history: [] }).checked('queue-pace')).toBe(0);
  });
});

describe('queue-final-at-end', () => {
  it('accepts every joined buyer told a final standing within the bound of the end', () => {
    const verdict = judge({
      history: [
        join(21, 1_000),
        read(21, 20_300, 'SOLD_OUT', true),
        join(22, 2_000),
        read(22, 8_000, 'EXPIRED', true),
      ],
    });
    expect(verdict.of('queue-final-at-end')).toEqual([]);
    expect(verdict.checked('queue-final-at-end')).toBeGreaterThanOrEqual(2);
  });

  it('names a joined buyer told nothing final within 5 s of the end', () => {
    const verdict = judge({
      history: [join(23, 1_000), read(23, 19_000, 'WAITING'), read(23, 26_000, 'SOLD_OUT', true)],
    });
    expect(
      verdict
        .of('queue-final-at-end')
        .map((v) => v.message)
        .join(),
    ).toContain('buyer 23');
  });

  it('waits past a fault held at the end: the bound counts from its heal', () => {
    const verdict = judge({
      history: [join(24, 1_000), read(24, 29_000, 'SOLD_OUT', true)],
      queue: facts({ faults: [fault(18_000, 25_000)] }),
    });
    expect(verdict.of('queue-final-at-end')).toEqual([]);
  });

  it('names a standing after the end that is not final, or ADMITTED', () => {
    const verdict = judge({
      history: [
        join(25, 1_000),
        read(25, 20_100, 'SOLD_OUT', true),
        read(25, 22_000, 'WAITING'),
        join(26, 1_000),
        read(26, 20_100, 'EXPIRED', true),
        read(26, 23_000, 'ADMITTED', true),
      ],
    });
    const [violation] = verdict.of('queue-final-at-end');
    expect(violation.message).toContain('2 standings read after the end');
  });

  it('names a purchase accepted after the end', () => {
    const verdict = judge({ history: [bought(27, 22_000)] });
    expect(verdict.of('queue-final-at-end')[0].message).toContain('after the end');
  });

  it('names an admission read before the end that lasts past it, unless a fault may have stopped the clock', () => {
    const outliving = entry({
      op: 'queue',
      buyer: 28,
      sentMs: 18_000,
      queueState: 'ADMITTED',
      final: false,
      admittedUntilEpochMs: START + 21_000 + TTL_MS,
    });
    const history = [join(28, 1_000), outliving, read(28, 20_100, 'EXPIRED', true)];
    expect(judge({ history }).of('queue-final-at-end')[0].historyIds).toEqual([outliving.id]);
    const excused = judge({ history, queue: facts({ faults: [fault(16_000, 17_000)] }) });
    expect(excused.of('queue-final-at-end')).toEqual([]);
    // A fault that cannot stop the room's clock excuses nothing.
    const broker = judge({
      history,
      queue: facts({ faults: [fault(16_000, 17_000, 'broker-close')] }),
    });
    expect(broker.of('queue-final-at-end')).toHaveLength(1);
  });

  it('judges a sale whose end falls after the heal not at all', () => {
    const verdict = judge({
      history: [join(29, 1_000), read(29, 19_000, 'WAITING')],
      queue: facts({ healedMs: 15_000 }),
    });
    expect(verdict.checked('queue-final-at-end')).toBe(0);
  });

  it('a deadline that faults push to the heal is judged on the settle reads', () => {
    expect(finalDeadline(20_000, [fault(19_000, 30_000), fault(33_000, 40_000)], 45_000)).toBe(
      Infinity,
    );
    expect(finalDeadline(20_000, [fault(10_000, 12_000)], 45_000)).toBe(25_000);
    expect(finalDeadline(20_000, [fault(24_000, 26_000, 'app-kill')], 45_000)).toBe(41_000);
  });
});

describe('every-waiting-told', () => {
  it('names a buyer who joined, bought nothing and was never told a final standing, once the sale ended', () => {
    const verdict = judge({
      history: [
        join(31, 1_000),
        read(31, 60_000, 'WAITING'),
        join(32, 1_000),
        read(32, 60_000, 'SOLD_OUT', true),
      ],
      queue: facts({ healedMs: 10_000 }),
    });
    expect(verdict.checked('every-waiting-told')).toBe(2);
    const [violation] = verdict.of('every-waiting-told');
    expect(violation.message).toContain('31');
    expect(violation.message).not.toContain('32 (');
  });

  it('leaves out the buyers who bought', () => {
    const verdict = judge({
      history: [join(33, 1_000), read(33, 9_000, 'PURCHASED', false)],
      sales: [
        sale({
          orders: [
            {
              orderNo: 'SK1',
              requestId: 'r',
              userId: 33,
              quantity: 1,
              status: 'PAID',
              createdAtEpochMs: START,
              updatedAtEpochMs: START,
            },
          ],
        }),
      ],
    });
    expect(verdict.checked('every-waiting-told')).toBe(0);
  });

  it('judges a sale that has not ended only once it sold out for good and the run was quiet', () => {
    const notEnded = facts({
      sales: [{ ...facts().sales[0], endMs: 3_600_000 }],
    });
    const history = [join(34, 1_000), read(34, 40_000, 'SOLD_OUT', false)];
    expect(judge({ history, queue: notEnded }).checked('every-waiting-told')).toBe(0);
    const soldOut = [sale({ mysqlStock: 0, redisStock: 0 })];
    expect(
      judge({ history, queue: notEnded, sales: soldOut }).of('every-waiting-told'),
    ).toHaveLength(1);
    expect(
      judge({ history, queue: notEnded, sales: soldOut, quietReached: false }).checked(
        'every-waiting-told',
      ),
    ).toBe(0);
  });
});

describe('queue-places-kept', () => {
  /** A WAITING standing that tells a position (its place less the head, from 1). */
  const placed = (buyer: number, sentMs: number, position: number) =>
    entry({ op: 'queue', buyer, sentMs, queueState: 'WAITING', position });
  const loss = fault(15_000, 17_000, 'redis-kill', true);
  const journal = (fields: Partial<QueueJournalSnapshot> = {}): QueueJournalSnapshot => ({
    goodsId: GOODS,
    seed: 'abc123',
    preSize: 7,
    joins: [],
    ...fields,
  });
  // 'abc123' over 7 join indices: the places lua/lib/queue-order.lua gives (queue-order.spec.ts).
  const PLACES = [5, 6, 0, 2, 1, 4, 3];
  const preQueue = (buyers: number[]) =>
    buyers.map((buyer, index) => ({ userId: buyer, line: 0 as const, position: index }));
  const places = (fields: Partial<QueueFacts>) => (history: HistoryEntry[]) =>
    judge({ history, queue: facts(fields) });

  it('names a buyer answered 200 on a join who reads NOT_JOINED after a Redis restart', () => {
    const lost = read(50, 18_000, 'NOT_JOINED');
    const verdict = places({ faults: [loss] })([
      join(50, 1_000),
      entry({ op: 'queue', buyer: 50, sentMs: 16_000, status: 503, code: 'UNAVAILABLE' }),
      lost,
      join(51, 1_000),
      read(51, 18_000, 'WAITING'),
    ]);
    const [violation] = verdict.of('queue-places-kept');
    expect(violation.message).toContain('NOT_JOINED');
    expect(violation.historyIds).toContain(lost.id);
    // Both were asked again after the restart: each counts.
    expect(verdict.checked('queue-places-kept')).toBe(2);
  });

  it('accepts a 503 while the room is restored, and counts nothing without a restart or a place read twice', () => {
    const history = [
      join(52, 1_000),
      entry({ op: 'queue', buyer: 52, sentMs: 16_000, status: 503, code: 'UNAVAILABLE' }),
      read(52, 18_000, 'WAITING'),
    ];
    expect(places({ faults: [loss] })(history).of('queue-places-kept')).toEqual([]);
    expect(places({})(history).checked('queue-places-kept')).toBe(0);
  });

  it('names a joined buyer missing from the MySQL journal, or on another line than it joined on', () => {
    const verdict = places({
      faults: [loss],
      // 53 joined before the start (5,000 ms): the pre-queue; 54 after it: behind it.
      journals: [journal({ joins: [{ userId: 53, line: 1, position: 1 }] })],
    })([join(53, 1_000), join(54, 8_000), join(55, 9_000)]);
    const messages = verdict.of('queue-places-kept').map((v) => v.message);
    expect(messages.some((m) => m.includes('not in the MySQL journal') && m.includes('54'))).toBe(
      true,
    );
    expect(messages.some((m) => m.includes('another line') && m.includes('53'))).toBe(true);
    expect(verdict.checked('queue-places-kept')).toBe(3);
  });

  it('names a buyer told two positions with no admission between, but not across one', () => {
    const admission = (atMs: number) => ({
      goodsId: GOODS,
      member: '0:1',
      count: 1,
      atEpochMs: START + atMs,
    });
    const history = [placed(56, 8_000, 4), placed(56, 8_400, 3)];
    const [moved] = places({})(history).of('queue-places-kept');
    expect(moved.message).toContain('two positions');
    const verdict = places({ admissions: [admission(8_200)] })(history);
    expect(verdict.of('queue-places-kept')).toEqual([]);
    // A place read twice at one head, with nothing to compare across the admission: one buyer.
    expect(
      places({})([placed(56, 8_000, 4), placed(56, 8_400, 4)]).checked('queue-places-kept'),
    ).toBe(1);
  });

  it('does not compare positions across a head moved without an admission logged (a restore)', () => {
    const sample = (atMs: number, head: number, journal = true) => ({
      goodsId: GOODS,
      atEpochMs: START + atMs,
      seed: 'abc123',
      head,
      journal,
    });
    const history = [placed(56, 8_000, 4), placed(56, 10_500, 6)];
    expect(places({})(history).of('queue-places-kept')).toHaveLength(1);
    // The journal's head (2) written back at 9,000–10,000 ms, no Redis loss: another window.
    const restored = [
      sample(7_000, 4),
      sample(8_500, 4),
      sample(9_500, 4, false),
      sample(10_000, 2),
    ];
    expect(places({ roomSamples: restored })(history).of('queue-places-kept')).toEqual([]);
    // The head sampled where the log left it: one window still.
    const logged = [sample(7_000, 0), sample(8_500, 0), sample(10_000, 0)];
    expect(places({ roomSamples: logged })(history).of('queue-places-kept')).toHaveLength(1);
  });

  it('names two buyers told in one order before a Redis restart and in the other after', () => {
    const before = [placed(57, 10_000, 2), placed(58, 10_100, 5)];
    const keptOrder = places({ faults: [loss] })([
      ...before,
      placed(57, 30_000, 2),
      placed(58, 30_100, 3),
    ]);
    expect(keptOrder.of('queue-places-kept')).toEqual([]);
    expect(keptOrder.checked('queue-places-kept')).toBe(2);
    const swapped = places({ faults: [loss] })([
      ...before,
      placed(57, 30_000, 4),
      placed(58, 30_100, 2),
    ]);
    const [violation] = swapped.of('queue-places-kept');
    expect(violation.message).toContain('in one order, then in the other');
    // Position 1 is every place the head passed: two buyers there are no inversion, nor a tie.
    expect(
      places({ faults: [loss] })([...before, placed(57, 30_000, 1), placed(58, 30_100, 1)]).of(
        'queue-places-kept',
      ),
    ).toEqual([]);
  });

  it("names buyers told in another order than the journal's seed gives them", () => {
    const buyers = [60, 61, 62, 63, 64, 65, 66];
    const kept = { journals: [journal({ joins: preQueue(buyers) })] };
    // With the head at 0, each is told its place plus one.
    const told = buyers.slice(0, 5).map((buyer, i) => placed(buyer, 8_000 + i * 10, PLACES[i] + 1));
    expect(places(kept)(told).of('queue-places-kept')).toEqual([]);
    // 60 (place 5) told ahead of 61 (place 6) is right; told behind it is another seed's order.
    const [violation] = places(kept)([placed(60, 8_000, 8), placed(61, 8_010, 7)]).of(
      'queue-places-kept',
    );
    expect(violation.message).toContain("another order than the MySQL journal's");
  });

  it('names a seed in Redis other than the one MySQL kept, and counts the samplings after a restart', () => {
    const sample = (atMs: number, seed: string) => ({
      goodsId: GOODS,
      atEpochMs: START + atMs,
      seed,
      head: 0,
      journal: true,
    });
    const kept = places({
      faults: [loss],
      journals: [journal()],
      roomSamples: [sample(6_000, 'abc123'), sample(20_000, 'abc123'), sample(21_000, 'abc123')],
    })([]);
    expect(kept.of('queue-places-kept')).toEqual([]);
    expect(kept.checked('queue-places-kept')).toBe(2);
    const redrawn = places({
      faults: [loss],
      journals: [journal()],
      roomSamples: [sample(6_000, 'abc123'), sample(20_000, 'ffff')],
    })([]);
    const [violation] = redrawn.of('queue-places-kept');
    expect(violation.message).toContain('the seed changed');
    expect(violation.message).toContain('ffff');
  });

  it('names an ADMITTED read after an EXPIRED, or after a PURCHASED whose order was in MySQL', () => {
    const order = (userId: number, atMs: number) => ({
      orderNo: `o-${userId}`,
      requestId: `r-${userId}`,
      userId,
      quantity: 1,
      status: 'PAID' as const,
      createdAtEpochMs: START + atMs,
      updatedAtEpochMs: START + atMs,
    });
    const verdict = judge({
      history: [
        read(70, 9_000, 'ADMITTED'),
        read(70, 13_000, 'EXPIRED', true),
        read(70, 19_000, 'ADMITTED'),
        read(71, 9_000, 'ADMITTED'),
        read(71, 10_000, 'PURCHASED', true),
        read(71, 19_000, 'ADMITTED'),
        // Its purchase was on its way to MySQL (no order yet), then refused: admitted again.
        read(72, 9_000, 'PURCHASED'),
        read(72, 9_500, 'ADMITTED'),
      ],
      sales: [sale({ orders: [order(71, 9_800), order(72, 12_000)] })],
    });
    const [violation] = verdict.of('queue-places-kept');
    expect(violation.message).toMatch(/^queued: 2 buyers read ADMITTED/);
    expect(violation.message).toContain('70 (');
    expect(violation.message).toContain('71 (');
    expect(violation.message).not.toContain('72 (');
  });
});

describe('queue-admission-order', () => {
  // Four buyers in the pre-queue (join indices 0-3) and one behind it: their places by the seed.
  const seed = 'order-seed';
  const journal: QueueJournalSnapshot = {
    goodsId: GOODS,
    seed,
    preSize: 4,
    joins: [
      ...[31, 32, 33, 34].map((userId, position) => ({ userId, line: 0 as const, position })),
      { userId: 35, line: 1, position: 0 },
    ],
  };
  const order = queueOrder(seed, 4);
  const byPlace = [31, 32, 33, 34].sort((a, b) => order.placeOf(a - 31) - order.placeOf(b - 31));
  const room = (admitted: number[], expired: number[] = []) => ({
    goodsId: GOODS,
    admitted: Object.fromEntries(admitted.map((buyer) => [String(buyer), START + 9_000])),
    expired: expired.map(String),
  });

  it('accepts a room that admitted the first places of the permutation, lapsed ones included', () => {
    const verdict = judge({
      history: [],
      queue: facts({ journals: [journal], rooms: [room([byPlace[0]], [byPlace[1]])] }),
    });
    expect(verdict.of('queue-admission-order')).toEqual([]);
    expect(verdict.checked('queue-admission-order')).toBe(2);
  });

  it('names a buyer passed over: admitted after it in the permutation while it still waits', () => {
    const verdict = judge({
      history: [],
      queue: facts({ journals: [journal], rooms: [room([byPlace[0], byPlace[2]])] }),
    });
    const [violation] = verdict.of('queue-admission-order');
    expect(violation.message).toContain(`buyer ${byPlace[1]} at place 1 was never admitted`);
    expect(violation.message).toContain(`${byPlace[2]} at 2`);
  });

  it('names a buyer of the line admitted before the pre-queue is through', () => {
    const verdict = judge({
      history: [],
      queue: facts({ journals: [journal], rooms: [room([byPlace[0], 35])] }),
    });
    expect(verdict.of('queue-admission-order')[0]?.message).toContain('35 at 4');
  });

  it('checks nothing when the room admitted nobody, or everybody', () => {
    for (const admitted of [[], [31, 32, 33, 34, 35]]) {
      const verdict = judge({
        history: [],
        queue: facts({ journals: [journal], rooms: [room(admitted)] }),
      });
      expect(verdict.checked('queue-admission-order')).toBe(0);
    }
  });
});

describe('queue-draw-verifiable', () => {
  /** A draw as the app publishes and exports it: six pre-queue joins, the first three admitted. */
  const drawn = () => {
    const secret = randomBytes(32);
    const key = randomBytes(32);
    const digest = new PreQueueDigest();
    for (let index = 0; index < 6; index++) digest.add(index, pseudonymOf(key, 40 + index));
    const seed = drawSeed(secret, digest.digest());
    const order = queueOrderOf(seed, 6);
    const published = {
      goodsId: GOODS,
      seedCommitment: seedCommitment(secret),
      drawn: true,
      secret: secret.toString('hex'),
      digest: digest.digest(),
      preSize: 6,
      seed,
    };
    const exported = {
      ...published,
      preQueue: Array.from({ length: 6 }, (_, joinIndex) => ({
        joinIndex,
        pseudonym: pseudonymOf(key, 40 + joinIndex),
        place: order.placeOf(joinIndex) < 3 ? order.placeOf(joinIndex) : null,
      })),
      after: [],
    };
    const receipt = (buyer: number, commitment = published.seedCommitment) =>
      entry({
        op: 'join',
        buyer,
        sentMs: 1_000,
        queueState: 'WAITING',
        receipt: {
          joinIndex: buyer - 40,
          pseudonym: pseudonymOf(key, buyer),
          seedCommitment: commitment,
        },
      });
    return { published, exported, receipt };
  };

  it('checks a draw whose export and receipts agree with what it revealed', () => {
    const { published, exported, receipt } = drawn();
    const verdict = judge({
      history: [receipt(40), receipt(41)],
      queue: facts({ draws: [{ goodsId: GOODS, published, exported }] }),
    });
    expect(verdict.of('queue-draw-verifiable')).toEqual([]);
    expect(verdict.checked('queue-draw-verifiable')).toBe(3);
  });

  it('names the place of an admission the export moved, and a receipt told another commitment', () => {
    const { published, exported, receipt } = drawn();
    const moved = exported.preQueue.find((e) => e.place === 1)!;
    moved.place = 4;
    const verdict = judge({
      history: [receipt(40, 'f'.repeat(64))],
      queue: facts({ draws: [{ goodsId: GOODS, published, exported }] }),
    });
    const messages = verdict.of('queue-draw-verifiable').map((v) => v.message);
    expect(messages[0]).toContain('place 1:');
    expect(messages[1]).toContain('another commitment');
  });

  it("names a receipt whose join the export does not hold, and a drawn sale's export not read", () => {
    const { published, exported, receipt } = drawn();
    const stranger = receipt(41);
    stranger.receipt!.pseudonym = 'e'.repeat(32);
    expect(
      judge({
        history: [stranger],
        queue: facts({ draws: [{ goodsId: GOODS, published, exported }] }),
      }).of('queue-draw-verifiable')[0].message,
    ).toContain('does not hold at its index');
    expect(
      judge({
        history: [],
        queue: facts({ draws: [{ goodsId: GOODS, published, exported: null }] }),
      }).of('queue-draw-verifiable')[0].message,
    ).toContain('export could not be read');
  });

  it('checks nothing before the draw', () => {
    const { published, exported } = drawn();
    const undrawn = { goodsId: GOODS, seedCommitment: published.seedCommitment, drawn: false };
    const verdict = judge({
      history: [],
      queue: facts({ draws: [{ goodsId: GOODS, published: undrawn, exported }] }),
    });
    expect(verdict.checked('queue-draw-verifiable')).toBe(0);
  });
});

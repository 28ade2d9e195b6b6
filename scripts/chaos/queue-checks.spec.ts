import { describe, expect, it } from 'vitest';

import type { InvariantName, SaleSnapshot, Violation } from './checker.js';
import type { HistoryEntry } from './history.js';
import {
  checkQueues,
  finalDeadline,
  type FaultSpan,
  type QueueCheckInput,
  type QueueFacts,
} from './queue-checks.js';

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

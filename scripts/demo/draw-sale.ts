// The demo's draw sale (--draw): people enter during the entry window and follow their entry on
// its stream, as the buyer's page does; scripted buyers enter in the last few hundred
// milliseconds and fire purchases from the start as fast as the rate limits let them. The draw at
// the close gives the first `stock` entries a purchase right; people buy with theirs once the sale
// starts, a share of them walks away (the right lapses and passes to the next entry), and at the
// end `npm run verify-draw` checks the draw against the public answer and the operator's export.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

import type { DrawExport } from '../../src/modules/waiting-room/draw-verifier.js';
import { ScriptError } from '../lib/errors.js';
import { isRecord, requestJson } from '../lib/http.js';
import { buyerHeaders } from '../lib/load.js';
import { createGoods, preheatGoods } from '../lib/sale.js';
import type { DemoOptions } from './options.js';
import { FIRST_BUYER_ID as FIRST_ID } from './phases.js';
import {
  describeProgress,
  follow,
  joinAll,
  joinRequest,
  SALE_TIMEOUT_MS,
  snipeAll,
  type Crowd,
  type Person,
} from './queue-sale.js';
import { fairDraw } from './queue-report.js';
import { newTable, type Check } from './report.js';

/** How long before the close the scripts enter: the last moment, as a sniping script would. */
const SCRIPTS_ENTER_BEFORE_CLOSE_MS = 300;
/** The entry window lasts this long at least, plus ENTRY_LEAD_PER_PERSON_MS per person. */
const MIN_WINDOW_MS = 3_000;
const ENTRY_LEAD_PER_PERSON_MS = 2;
/** The sale starts this long after the draw: the rights are known before anybody can buy. */
const START_AFTER_CLOSE_MS = 2_000;

/** Of the winners who buy, the share who cancel at once (the unit passes down the waitlist). */
const CANCEL_SHARE = 0.05;
const RESULT_POLL_MS = 200;
const RESULT_POLLS = 100;

const FINAL_ENTRY_STATES: ReadonlySet<string> = new Set(['PURCHASED', 'NOT_SELECTED', 'EXPIRED']);

export interface DrawSaleRun {
  goodsId: number;
  closeAt: number;
  startAt: number;
  stock: number;
  people: Person[];
  scripts: number[];
  entries: { people: number; scripts: number; peopleMs: number };
  /** Buyers whose purchase was answered 202, and when (ms after the start). */
  accepted: Map<number, number>;
  scriptAnswers: Map<string, number>;
  /** The export's places given a right, in order (0-based draw ranks). */
  rightPlaces: number[];
  /** The buyers holding an order whose entry does not read PURCHASED. */
  boughtWithoutRight: number[];
  /**
   * Scripts whose right lapsed unused: a script stops at SOLD_OUT, and a unit that comes back
   * later may pass its right to it all the same.
   */
  scriptsLapsed: number;
  /** Winners who cancelled their order at once: each unit came back to the waitlist. */
  cancelled: number;
  /** `npm run verify-draw`'s exit code and its report line. */
  verified: { status: number; line: string };
  timedOut: boolean;
}

/** The whole draw sale, from its creation until every entrant has a final answer. */
export async function runDrawSale(
  baseUrl: string,
  adminToken: string,
  options: DemoOptions,
): Promise<DrawSaleRun> {
  const origin = new URL(baseUrl).origin;
  const people: Person[] = Array.from({ length: options.buyers }, (_, index) => ({
    id: FIRST_ID + index,
    index,
    walksAway: Math.random() < options.walkAway,
    seen: new Map(),
  }));
  const scripts = Array.from({ length: options.scripts }, (_, j) => FIRST_ID + options.buyers + j);
  const closeAt = Date.now() + MIN_WINDOW_MS + options.buyers * ENTRY_LEAD_PER_PERSON_MS;
  const startAt = closeAt + START_AFTER_CLOSE_MS;
  const goodsId = await createGoods(baseUrl, adminToken, {
    name: 'Demo sneakers (draw)',
    price: 199,
    stock: options.stock,
    admission: 'draw',
    entriesOpenAt: new Date(Date.now() - 1_000),
    entriesCloseAt: new Date(closeAt),
    claimSeconds: options.admissionTtlSeconds,
    winnersFactor: 1,
    startAt: new Date(startAt),
    endAt: new Date(startAt + SALE_TIMEOUT_MS),
  });
  await preheatGoods(baseUrl, adminToken, goodsId);
  const crowd: Crowd = { origin, goodsId, startAt };
  console.log(
    `draw sale ${goodsId}: ${options.stock} units, entries close in ${((closeAt - Date.now()) / 1000).toFixed(1)} s, ` +
      `the sale starts ${START_AFTER_CLOSE_MS / 1000} s later; ${people.length} people enter now, ` +
      `${scripts.length} scripts ${SCRIPTS_ENTER_BEFORE_CLOSE_MS} ms before the close; each right lasts ${options.admissionTtlSeconds} s`,
  );
  console.log(`its fairness answer: ${origin}/api/v1/goods/${goodsId}/fairness`);

  const peopleEntries = await joinAll(
    origin,
    people.map((p) => joinRequest(goodsId, p.id, p.index, 'entry')),
    options.concurrency,
  );
  if (Date.now() > closeAt - SCRIPTS_ENTER_BEFORE_CLOSE_MS) {
    throw new ScriptError(
      `the people's entries took ${Math.round(peopleEntries.ms)} ms, past the window: try fewer --buyers`,
    );
  }
  const deadline = startAt + SALE_TIMEOUT_MS;
  // A winner pays at once (a unit then never comes back), or now and then cancels: its unit
  // passes to the next entry on the waitlist.
  let cancelled = 0;
  const standing = {
    stream: 'entry',
    buyOn: 'SELECTED',
    finalStates: FINAL_ENTRY_STATES,
    afterBuy: async (person: Person) => {
      const cancel = Math.random() < CANCEL_SHARE;
      if ((await settle(origin, goodsId, person, cancel ? 'cancel' : 'pay')) && cancel) {
        cancelled++;
      }
    },
  } as const;
  const following = people.map((person) => follow(crowd, person, deadline, standing));
  await sleep(closeAt - SCRIPTS_ENTER_BEFORE_CLOSE_MS - Date.now());
  const scriptEntries = await joinAll(
    origin,
    scripts.map((id, j) => joinRequest(goodsId, id, people.length + j, 'entry')),
    50,
  );
  console.log(
    `entered: ${peopleEntries.joined} people in ${(peopleEntries.ms / 1000).toFixed(2)} s, ` +
      `${scriptEntries.joined} scripts in the last ${SCRIPTS_ENTER_BEFORE_CLOSE_MS} ms${scriptEntries.refused ? ` (refused: ${scriptEntries.refused})` : ''}; the draw at the close`,
  );
  await sleep(startAt - Date.now());

  const accepted = new Map<number, number>();
  const scriptAnswers = new Map<string, number>();
  const progress = setInterval(
    () => console.log(describeProgress(people, scriptAnswers, startAt)),
    2_000,
  );
  try {
    await Promise.all([
      snipeAll(crowd, scripts, people.length, scriptAnswers, accepted, deadline),
      Promise.all(following),
    ]);
  } finally {
    clearInterval(progress);
  }
  for (const person of people) {
    if (person.bought === '202') accepted.set(person.id, person.boughtAt!);
  }
  const exported = await requestJson('GET', `${origin}/api/v1/admin/goods/${goodsId}/entries`, {
    token: adminToken,
  });
  const rightPlaces =
    exported.status === 200
      ? (exported.body as DrawExport).preQueue
          .map((entry) => entry.place)
          .filter((place): place is number => place !== null)
          .sort((a, b) => a - b)
      : [];
  return {
    goodsId,
    closeAt,
    startAt,
    stock: options.stock,
    people,
    scripts,
    entries: {
      people: peopleEntries.joined,
      scripts: scriptEntries.joined,
      peopleMs: peopleEntries.ms,
    },
    accepted,
    scriptAnswers,
    cancelled,
    rightPlaces,
    boughtWithoutRight: await boughtWithoutRight(origin, goodsId, [...accepted.keys()]),
    scriptsLapsed: (await entryStates(origin, goodsId, scripts)).filter((s) => s === 'EXPIRED')
      .length,
    verified: await verifyDraw(baseUrl, goodsId, exported.status === 200 ? exported.body : null),
    timedOut:
      Date.now() >= deadline ||
      people.some((p) => ![...p.seen.keys()].some((s) => FINAL_ENTRY_STATES.has(s))),
  };
}

/** The winner's order, once written, paid or cancelled by its owner; false if never settled. */
async function settle(
  origin: string,
  goodsId: number,
  person: Person,
  action: 'pay' | 'cancel',
): Promise<boolean> {
  const headers = buyerHeaders(person.id, person.index);
  for (let poll = 0; poll < RESULT_POLLS; poll++) {
    const result = await fetch(`${origin}/api/v1/seckill/${goodsId}/result`, { headers })
      .then((response) => response.json())
      .catch(() => undefined);
    if (isRecord(result) && result.status === 'SUCCESS' && typeof result.orderNo === 'string') {
      const path = `/api/v1/orders/${encodeURIComponent(result.orderNo)}/${action}`;
      const done = await fetch(`${origin}${path}`, { method: 'POST', headers }).catch(() => null);
      return done?.status === 200;
    }
    if (isRecord(result) && result.status === 'FAILED') return false;
    await sleep(RESULT_POLL_MS);
  }
  return false;
}

/** Each buyer's entry state now, as GET /entry answers it ('unknown' when it does not). */
async function entryStates(origin: string, goodsId: number, userIds: number[]): Promise<string[]> {
  const states: string[] = [];
  for (const userId of userIds) {
    const response = await fetch(`${origin}/api/v1/seckill/${goodsId}/entry`, {
      headers: buyerHeaders(userId, userId - FIRST_ID),
    });
    const body: unknown = await response.json();
    states.push(isRecord(body) && typeof body.state === 'string' ? body.state : 'unknown');
  }
  return states;
}

/** The buyers holding an order whose entry is not PURCHASED: each must have used a right. */
async function boughtWithoutRight(
  origin: string,
  goodsId: number,
  userIds: number[],
): Promise<number[]> {
  const states = await entryStates(origin, goodsId, userIds);
  return userIds.filter((_, i) => states[i] !== 'PURCHASED');
}

/** `npm run verify-draw -- --export`, run apart as an auditor would, on the export read. */
async function verifyDraw(
  baseUrl: string,
  goodsId: number,
  exported: unknown,
): Promise<DrawSaleRun['verified']> {
  if (exported === null) return { status: 2, line: 'the export could not be read' };
  const dir = mkdtempSync(join(tmpdir(), 'demo-draw-'));
  const file = join(dir, 'export.json');
  try {
    writeFileSync(file, JSON.stringify(exported));
    const args = ['tsx', 'scripts/verify-draw.ts', '--goods', String(goodsId)];
    args.push('--base-url', baseUrl, '--export', file);
    console.log(`npx ${args.join(' ').replace(file, '<export>')}`);
    return await new Promise((resolve) => {
      execFile('npx', args, { encoding: 'utf8' }, (error, stdout, stderr) =>
        resolve({
          status: error ? Number(error.code ?? 2) : 0,
          line: (stdout.trim() || stderr.trim()).split('\n')[0] ?? '',
        }),
      );
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const percent = (part: number, whole: number) =>
  whole === 0 ? 'n/a' : `${((100 * part) / whole).toFixed(1)} %`;

/** The draw sale's figures, as a table. */
export function buildDrawTable(run: DrawSaleRun): string {
  const scriptSet = new Set(run.scripts);
  const sold = [...run.accepted.keys()];
  const scriptsSold = sold.filter((id) => scriptSet.has(id)).length;
  const lapsed = run.people.filter((p) => p.seen.has('EXPIRED')).length + run.scriptsLapsed;
  const fair = fairDraw(run.stock, run.scripts.length, run.people.length);
  const table = newTable('draw sale');
  table.push(
    ['entries (people, scripts)', `${run.entries.people}, ${run.entries.scripts}`],
    ['rights given (draw + passed on)', String(run.rightPlaces.length)],
    ['rights lapsed unused', String(lapsed)],
    ['orders cancelled at once (units back)', String(run.cancelled)],
    ['purchases accepted', String(sold.length)],
    [
      'units to scripts',
      `${scriptsSold} (${percent(scriptsSold, sold.length)}; a fair draw ${fair.mean.toFixed(1)} ± ${fair.sd.toFixed(1)})`,
    ],
    ['scripts answered', [...run.scriptAnswers].map(([code, n]) => `${code} ${n}`).join(', ')],
    ['verify-draw', run.verified.line],
  );
  return table.toString();
}

/**
 * The draw sale's promises, each OK or BROKEN. `unitsBack`: the units cancelled orders gave back
 * (a winner's cancel, an unpaid order's expiry), each of which passes a right on.
 */
export function evaluateDrawChecks(run: DrawSaleRun, unitsBack: number): Check[] {
  const sold = run.accepted.size;
  const lapsed = run.people.filter((p) => p.seen.has('EXPIRED')).length + run.scriptsLapsed;
  const prefix = run.rightPlaces.every((place, i) => place === i);
  const boughtBeforeRight = run.people.filter(
    (p) =>
      p.bought === '202' &&
      (p.seen.get('SELECTED') === undefined || p.seen.get('SELECTED')! > p.boughtAt!),
  );
  return [
    {
      name: 'no purchase without a right in force',
      ok: run.boughtWithoutRight.length === 0 && boughtBeforeRight.length === 0,
      detail:
        run.boughtWithoutRight.length + boughtBeforeRight.length === 0
          ? `every one of the ${sold} buyers used its right (its entry reads PURCHASED)`
          : `${run.boughtWithoutRight.length} bought without one: ${run.boughtWithoutRight.slice(0, 5).join(', ')}; ${boughtBeforeRight.length} before told SELECTED`,
    },
    {
      name: 'rights passed in draw order',
      // Every right that lapsed, and every unit back, passed one on (while entries were left).
      ok:
        prefix &&
        run.rightPlaces.length ===
          Math.min(run.stock + lapsed + unitsBack, run.entries.people + run.entries.scripts),
      detail: `${run.rightPlaces.length} rights given to ranks 1..${run.rightPlaces.length}${prefix ? '' : ' (NOT a prefix of the draw)'}: the ${run.stock} at the draw and ${run.rightPlaces.length - Math.min(run.stock, run.rightPlaces.length)} passed on, for ${lapsed} lapsed and ${unitsBack} units back (cancelled or expired orders)`,
    },
    {
      name: 'the draw checks out from the outside',
      ok: run.verified.status === 0,
      detail: `npm run verify-draw: ${run.verified.line}`,
    },
    {
      name: 'every entrant told a final standing',
      ok: !run.timedOut,
      detail: run.timedOut ? 'some were still waiting at the deadline' : 'all of them',
    },
  ];
}

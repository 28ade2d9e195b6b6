import { Injectable, Logger } from '@nestjs/common';
import { addressIdentity } from '../../common/http/client-address.js';
import { DomainError, orUnavailable, UnavailableError } from '../../common/errors/domain-error.js';
import { InjectConfig } from '../../config/config-namespace.js';
import { seckillConfig, type SeckillConfig } from '../../config/seckill.config.js';
import type { GoodsEntity } from '../../infra/database/entities/goods.entity.js';
import { GoodsService } from '../goods/goods.service.js';
import { ChallengeService } from '../challenge/challenge.service.js';
import { waitingRoomConfig, type WaitingRoomConfig } from '../../config/waiting-room.config.js';
import { DrawJournalService } from '../queue-journal/draw-journal.service.js';
import { pseudonymOf, seedCommitment } from '../queue-journal/fairness.js';
import { JoinJournalService } from '../queue-journal/join-journal.service.js';
import { QueueRestoreService } from '../queue-journal/queue-restore.service.js';
import { JoinCode, QueueScripts, type QueueStanding, type QueueState } from './queue.scripts.js';
import { ReturnsOutlookService } from './returns-outlook.service.js';
import { isQueueSale, isRoomSale, roomPlanOf, type DrawSale, type QueueSale } from './room-sale.js';

/** GET /api/v1/seckill/:goodsId/queue's answer (the contract's). */
export interface QueueStatus {
  state: QueueState;
  /** 1 for the next buyer to be admitted; null unless WAITING and placed by the shuffle. */
  position: number | null;
  ahead: number | null;
  /**
   * Seconds until admission at the pace in force (admitPerSecond), 0 once ADMITTED; null when it
   * cannot be known (before the shuffle, paused or otherwise stopped, beyond what the stock lets
   * in now, past endAt) and once not waiting.
   */
  etaSeconds: number | null;
  admittedUntil?: string;
  /** The state can no longer change (see isFinal). */
  final: boolean;
}

/**
 * What a join answers besides the status: what the buyer needs to check its own place once the
 * draw is revealed (GET /api/v1/goods/:goodsId/fairness), and to find itself in the export.
 */
export interface JoinReceipt {
  /** The pre-queue's join index (the draw orders them); null for a join after the draw. */
  joinIndex: number | null;
  /** Behind the pre-queue: the arrival number (1, 2, …); null in the pre-queue. */
  arrival: number | null;
  /** The buyer's pseudonym in this sale's digest and export (never its user id). */
  pseudonym: string;
  /** The hex SHA-256 of the secret the order is drawn with, committed before the first join. */
  seedCommitment: string;
}

/** What a standing's answer needs besides the standing. */
export interface StandingOutlook {
  /** QUEUE_ADMIT_STOCK_FACTOR: the deciding buyers stay within the stock times this. */
  stockFactor: number;
  /** A unit may still come back to a sold-out sale (an unpaid order is left). */
  unitsMayReturn: boolean;
}

/** A restore takes a few seconds (the journal's write timeout, then the reads and writes). */
const RESTORING_RETRY_SECONDS = 2;

/**
 * A `queue` sale's waiting room, as the buyer meets it: joining (the pre-queue until the shuffle
 * at startAt, then in arrival order) and the standing; the join and the standing serve a `draw`
 * sale's entries too (DrawEntryService). Admission itself is AdmissionPacerService's; the deduct
 * sells only to admitted buyers (lua/seckill-deduct.lua).
 */
@Injectable()
export class WaitingRoomService {
  private readonly logger = new Logger(WaitingRoomService.name);

  constructor(
    private readonly goods: GoodsService,
    private readonly scripts: QueueScripts,
    private readonly challenges: ChallengeService,
    private readonly returns: ReturnsOutlookService,
    private readonly journal: JoinJournalService,
    private readonly draws: DrawJournalService,
    private readonly restore: QueueRestoreService,
    @InjectConfig(seckillConfig) private readonly seckill: SeckillConfig,
    @InjectConfig(waitingRoomConfig) private readonly config: WaitingRoomConfig,
  ) {}

  /**
   * Joins (or keeps the place held); with SECKILL_REQUIRE_CHALLENGE on, a solved challenge.
   * `address`: the client address the account cap counts (an IPv6 /64 as one), null for a
   * trusted proxy's own request (counted per user only).
   */
  async join(
    goodsId: number,
    userId: number,
    challenge?: string,
    address: string | null = null,
  ): Promise<QueueStatus & { receipt: JoinReceipt }> {
    const sale = await this.queueSale(goodsId);
    const placed = await this.place(sale, userId, challenge, address, {
      notOpen: () => notOpenYet(sale),
      closed: () => new DomainError('SALE_ENDED', 'The sale has ended'),
    });
    return { ...(await this.status(goodsId, userId)), receipt: placed.receipt };
  }

  /**
   * A join of the room of a queue or a draw sale (a draw's entry), the one way into either: the
   * window judged here first, so that a solved challenge is not burnt on a join that cannot be
   * had, then by Redis's clock (lua/queue-join.lua); the secret the order will be drawn with
   * committed in MySQL before the join is placed; the join kept in MySQL before it is answered.
   * `refusals`: the errors of a join before the room opens, or once it takes no more.
   */
  async place(
    sale: QueueSale | DrawSale,
    userId: number,
    challenge: string | undefined,
    address: string | null,
    refusals: { notOpen: () => DomainError; closed: () => DomainError },
  ): Promise<{ code: JoinCode; receipt: JoinReceipt }> {
    const goodsId = sale.id;
    const plan = roomPlanOf(sale, this.config.admitStockFactor);
    const now = Date.now();
    if (now < plan.opensAt) throw refusals.notOpen();
    if (now >= plan.joinsUntil) throw refusals.closed();
    if (this.seckill.requireChallenge) {
      await this.challenges.redeem(goodsId, userId, challenge);
    }
    // The secret the order will be drawn with is committed (in MySQL) before any join is placed.
    const secrets = await orUnavailable('MySQL', () => this.draws.secretsOf(goodsId));
    const counted = address === null ? null : addressIdentity(address);
    const placed = () =>
      orUnavailable('Redis', () =>
        this.scripts.join(
          goodsId,
          userId,
          { opensAt: plan.opensAt, startAt: plan.drawAt, endAt: plan.joinsUntil },
          { address: counted, maxAccounts: this.config.maxAccountsPerAddress },
        ),
      );
    const { code, line, position } = await this.restoredFirst(goodsId, placed, (result) =>
      result.code === JoinCode.Restoring ? null : result,
    );
    if (code === JoinCode.NotOpen) throw refusals.notOpen();
    if (code === JoinCode.Ended) throw refusals.closed();
    if (code === JoinCode.TooManyAccounts) {
      this.logger.warn(
        `${sale.admission} join refused, accounts per address: goods=${goodsId} user=${userId}`,
      );
      throw new DomainError(
        'TOO_MANY_REQUESTS',
        `This address has put ${this.config.maxAccountsPerAddress} accounts into the ${sale.admission === 'draw' ? 'draw' : 'waiting room'} already (QUEUE_MAX_ACCOUNTS_PER_ADDRESS)`,
        // The cap holds for the whole sale.
        { retryAfterSeconds: Math.max(1, Math.ceil((sale.endAt.getTime() - Date.now()) / 1000)) },
      );
    }
    // Answered once MySQL holds it (a kept place too: its first write may have failed), so that
    // no join the buyer was told of is lost with Redis.
    await this.journal.record({ goodsId, userId, line, position, address: counted });
    if (code === JoinCode.Joined) {
      this.logger.debug(
        `${sale.admission} joined: goods=${goodsId} user=${userId} line=${line} position=${position}`,
      );
    }
    return {
      code,
      receipt: {
        joinIndex: line === 0 ? position : null,
        arrival: line === 1 ? position : null,
        pseudonym: pseudonymOf(secrets.pseudonymKey, userId),
        seedCommitment: seedCommitment(secrets.secret),
      },
    };
  }

  async status(goodsId: number, userId: number): Promise<QueueStatus> {
    const sale = await this.queueSale(goodsId);
    return this.answer(sale, await this.standing(sale, userId));
  }

  /**
   * The buyer's standing, read from Redis: 503 UNAVAILABLE when it cannot be, and with
   * Retry-After while the room is being restored (after a Redis restart, or found not the
   * journal's), so that nobody is told a place that may no longer be true. `place`: a SOLD_OUT
   * buyer's place in line too (QueueScripts.status).
   */
  async standing(
    sale: QueueSale | DrawSale,
    userId: number,
    options: { place?: boolean } = {},
  ): Promise<QueueStanding> {
    return this.restoredFirst(
      sale.id,
      () =>
        orUnavailable('Redis', () =>
          this.scripts.status(sale.id, userId, sale.endAt.getTime(), options),
        ),
      (standing) => standing,
    );
  }

  /**
   * Reads the room; where it is not the journal's (a new room, or one Redis lost), restores it
   * (QueueRestoreService, once for every caller) and reads again: still not, 503 with
   * Retry-After, so that nobody is told a place MySQL does not hold.
   */
  private async restoredFirst<R, T>(
    goodsId: number,
    read: () => Promise<R>,
    usable: (result: R) => T | null,
  ): Promise<T> {
    const first = usable(await read());
    if (first !== null) return first;
    await this.restore.ensure(goodsId);
    const again = usable(await read());
    if (again !== null) return again;
    throw new UnavailableError(
      'The waiting room is being restored; ask again after Retry-After',
      undefined,
      { retryAfterSeconds: RESTORING_RETRY_SECONDS },
    );
  }

  /** The standing as the buyer reads it; MySQL is asked only of a SOLD_OUT before the end. */
  async answer(sale: QueueSale, standing: QueueStanding): Promise<QueueStatus> {
    return queueStatusOf(sale, standing, Date.now(), {
      stockFactor: this.config.admitStockFactor,
      unitsMayReturn: await this.unitsMayReturn(sale, standing),
    });
  }

  /** Whether a unit may still come back to a sold-out standing (asked of MySQL only then). */
  async unitsMayReturn(sale: QueueSale | DrawSale, standing: QueueStanding): Promise<boolean> {
    if (standing.state !== 'SOLD_OUT' || standing.ended) return false;
    return orUnavailable('MySQL', () => this.returns.mayReturn(sale.id));
  }

  /**
   * Throws 403 NOT_ADMITTED unless the buyer holds an admission in force, in a queue sale, and
   * 403 NOT_SELECTED unless it holds a purchase right in force, in a draw sale (the purchase
   * token's check; the purchase itself is judged by the deduct, atomically).
   */
  async requireAdmission(goods: GoodsEntity, userId: number): Promise<void> {
    if (!isRoomSale(goods)) return;
    const { state } = await this.standing(goods, userId);
    if (state === 'ADMITTED') return;
    if (goods.admission === 'draw') {
      throw new DomainError('NOT_SELECTED', 'You hold no purchase right in force in this draw');
    }
    throw new DomainError(
      'NOT_ADMITTED',
      `The waiting room has not admitted you (your queue state: ${state})`,
    );
  }

  /**
   * The goods, when it is a queue sale (404 GOODS_NOT_FOUND, 409 QUEUE_NOT_OPEN otherwise);
   * `fresh`: read from MySQL now, not the row served from memory for a second.
   */
  async queueSale(goodsId: number, { fresh = false } = {}): Promise<QueueSale> {
    const goods = await orUnavailable('MySQL', () =>
      fresh ? this.goods.findOrThrow(goodsId) : this.goods.findCached(goodsId),
    );
    if (!isQueueSale(goods)) {
      throw new DomainError(
        'QUEUE_NOT_OPEN',
        goods.admission === 'draw'
          ? `Goods ${goodsId} is a draw: enter it (POST /api/v1/seckill/${goodsId}/entry)`
          : `Goods ${goodsId} has no waiting room: it is sold to buyers as they come (admission open)`,
      );
    }
    return goods;
  }

  /** The goods, when it is a queue or a draw sale (404 GOODS_NOT_FOUND, 409 QUEUE_NOT_OPEN). */
  async roomSale(goodsId: number): Promise<QueueSale | DrawSale> {
    const goods = await orUnavailable('MySQL', () => this.goods.findCached(goodsId));
    if (!isRoomSale(goods)) {
      throw new DomainError(
        'QUEUE_NOT_OPEN',
        `Goods ${goodsId} has neither a waiting room nor a draw: it is sold to buyers as they come (admission open)`,
      );
    }
    return goods;
  }
}

export function notOpenYet(sale: QueueSale | DrawSale): DomainError {
  return new DomainError(
    'QUEUE_NOT_OPEN',
    `${sale.admission === 'draw' ? 'Entries open' : 'The waiting room opens'} at ${sale.queueOpensAt.toISOString()}`,
  );
}

/**
 * The state can no longer change: PURCHASED once the purchase is an order (one still on its way
 * to MySQL may be refused there, which gives the admission back), EXPIRED, SOLD_OUT once no unit
 * can come back, and every state at the sale's end.
 */
export function isFinal(standing: QueueStanding, unitsMayReturn: boolean): boolean {
  switch (standing.state) {
    case 'PURCHASED':
      return !standing.pending || standing.ended;
    case 'EXPIRED':
      return true;
    case 'SOLD_OUT':
      return standing.ended || !unitsMayReturn;
    default:
      return standing.ended;
  }
}

/** The standing as the buyer reads it: a place from 1, and an ETA at the pace in force. */
export function queueStatusOf(
  sale: QueueSale,
  standing: QueueStanding,
  now: number,
  outlook: StandingOutlook,
): QueueStatus {
  const { state, ahead } = standing;
  const final = isFinal(standing, outlook.unitsMayReturn);
  if (state === 'ADMITTED') {
    return {
      state,
      position: null,
      ahead: null,
      etaSeconds: 0,
      admittedUntil: new Date(standing.admittedUntil ?? now).toISOString(),
      final,
    };
  }
  if (state !== 'WAITING' || ahead === null) {
    return { state, position: null, ahead: null, etaSeconds: null, final };
  }
  return {
    state,
    position: ahead + 1,
    ahead,
    etaSeconds: etaSeconds(sale, standing, ahead, now, outlook.stockFactor),
    final,
  };
}

/**
 * The buyers ahead are admitted first, at most admitPerSecond a second, and only as far as the
 * stock lets the deciding buyers grow: past that an admission waits for someone ahead to walk
 * away or a unit to come back, which nobody can foretell. Nor can anyone while the clock is
 * stopped (paused, rebuilt, cut off), and no admission comes after endAt.
 */
function etaSeconds(
  sale: QueueSale,
  standing: QueueStanding,
  ahead: number,
  now: number,
  stockFactor: number,
): number | null {
  if (standing.stopped || standing.ended || standing.stock === null) return null;
  if (ahead >= standing.stock * stockFactor - standing.deciding) return null;
  // A placed buyer's seed was drawn at startAt: the admissions run from now on.
  const eta = Math.ceil(ahead / sale.admitPerSecond);
  return now + eta * 1000 < sale.endAt.getTime() ? eta : null;
}

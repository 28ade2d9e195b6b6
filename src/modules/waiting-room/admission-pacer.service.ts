import { Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from '../../config/config-namespace.js';
import { waitingRoomConfig, type WaitingRoomConfig } from '../../config/waiting-room.config.js';
import { GoodsService } from '../goods/goods.service.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { QueueRestoreService } from '../queue-journal/queue-restore.service.js';
import { RoomJournalService } from '../queue-journal/room-journal.service.js';
import type { DrawRow } from '../queue-journal/queue-journal.repository.js';
import { ADMIT_BATCH, QueueScripts } from './queue.scripts.js';
import { RoomDrawService } from './room-draw.service.js';
import { isRoomSale, roomPlanOf, type DrawSale, type QueueSale } from './room-sale.js';

/** How long the list of open queues is reused before MySQL is asked again. */
const SALES_REFRESH_MS = 1_000;

/**
 * Two steps of a queue further apart than this many tick periods (and 2 s at least) mean that no
 * working instance reached the room in between (Redis unreachable or restarting): the room's
 * clock counts the gap as a stop, so that nobody's admission was spent while nobody could buy.
 */
const GAP_TICKS = 10;
const GAP_MIN_MS = 2_000;

/**
 * Each tick, every open queue or draw one step on (lua/queue-tick.lua): the shuffle's seed at the
 * draw (a queue's startAt, a draw's entriesCloseAt), lapsed admissions out, the next buyers in,
 * within admitPerSecond (a draw's rights unpaced) and the stock. Run by one working
 * instance at a time (WaitingRoomCron); the script is atomic all the same, so that two instances
 * ticking at once would only share the same budget.
 */
@Injectable()
export class AdmissionPacerService {
  private readonly logger = new Logger(AdmissionPacerService.name);
  private sales: { list: (QueueSale | DrawSale)[]; until: number } = { list: [], until: 0 };
  private readonly stopped = new Set<number>();

  constructor(
    private readonly goods: GoodsService,
    private readonly scripts: QueueScripts,
    private readonly journal: RoomJournalService,
    private readonly restore: QueueRestoreService,
    private readonly draws: RoomDrawService,
    private readonly metrics: MetricsService,
    @InjectConfig(waitingRoomConfig) private readonly config: WaitingRoomConfig,
  ) {}

  /** Throws, once every queue had its step, naming those that failed (the job logs it). */
  async tick(): Promise<void> {
    const failed: { goodsId: number; error: Error }[] = [];
    // MySQL not answering stops no queue: the list read last goes on being stepped (a gap in
    // the steps would stop the rooms' clocks while the buyers can still buy through Redis).
    let listError: Error | undefined;
    const sales = await this.openQueues().catch((error: Error) => {
      listError = error;
      return this.sales.list;
    });
    for (const sale of sales) {
      try {
        await this.step(sale);
      } catch (error) {
        failed.push({ goodsId: sale.id, error: error as Error });
      }
    }
    if (listError) throw new Error(`queue list not read: ${listError.message}`);
    if (failed.length > 0) {
      throw new Error(
        `queue step failed: goods=${failed.map((f) => f.goodsId).join(',')} ${failed[0].error.message}`,
      );
    }
  }

  private async step(sale: QueueSale | DrawSale): Promise<void> {
    // Full batches (ADMIT_BATCH) are followed by another call, for up to one tick period.
    const deadline = Date.now() + this.config.tickMs;
    const plan = roomPlanOf(sale, this.config.admitStockFactor);
    // Before the draw, the pre-queue as it grows into the digest the draw needs.
    if (Date.now() < plan.drawAt) await this.draws.follow(sale);
    // Drawn in MySQL first, once Redis's clock passed the start: Redis takes the seed MySQL keeps.
    let draw: DrawRow | null = null;
    let admitted = 0;
    let lapsed = 0;
    for (;;) {
      const result = await this.scripts.tick(sale.id, {
        drawAt: plan.drawAt,
        buyFrom: plan.buyFrom,
        endAt: plan.endAt,
        admitPerSecond: plan.admitPerSecond,
        admissionTtlMs: plan.admissionTtlMs,
        stockFactor: plan.stockFactor,
        seed: draw?.seed ?? '',
        preSize: draw?.preSize ?? 0,
        paused: sale.admissionPaused,
        gapMs: Math.max(GAP_MIN_MS, GAP_TICKS * this.config.tickMs),
      });
      if (result.restoring) {
        void this.restore.ensure(sale.id);
        return;
      }
      if (result.undrawn) {
        if (draw) {
          // The draw MySQL keeps is of another pre-queue than Redis holds: Redis lost joins
          // MySQL has (or holds some it never wrote). MySQL's room is the truth: written back
          // (the seed with it), and admission goes on from there.
          this.logger.warn(
            `queue draw refused by redis, room restored from mysql: goods=${sale.id} preSize=${draw.preSize} preSeq=${result.preSize}`,
          );
          void this.restore.ensure(sale.id, { anew: true });
          return;
        }
        draw = await this.draws.draw(sale, result.preSize);
        continue;
      }
      if (result.drawn) this.logger.log(`queue order drawn: goods=${sale.id}`);
      this.noteClock(sale.id, result.stopped);
      admitted += result.admitted;
      if (result.admitted > 0) {
        this.metrics.queueAdmissions.inc({ goods: String(sale.id) }, result.admitted);
      }
      lapsed += result.lapsed;
      if (Date.now() >= plan.drawAt) {
        // What the step did, in MySQL (kept for the next step's write when it fails).
        await this.journal.record(sale.id, {
          head: result.head,
          roomMs: result.roomMs,
          preSize: result.drawn ? result.preSize : undefined,
          admissions: result.users.map(({ place, userId }) => ({
            userId,
            untilMs: result.untilMs,
            place,
          })),
        });
      }
      if (result.admitted < ADMIT_BATCH || Date.now() >= deadline) break;
    }
    if (admitted > 0 || lapsed > 0) {
      this.logger.debug(`queue admitted: goods=${sale.id} admitted=${admitted} lapsed=${lapsed}`);
    }
  }

  /** One log line when a room's clock stops or runs again (not one per tick). */
  private noteClock(goodsId: number, stopped: boolean): void {
    if (this.stopped.has(goodsId) === stopped) return;
    if (stopped) this.stopped.add(goodsId);
    else this.stopped.delete(goodsId);
    this.logger.log(`queue clock ${stopped ? 'stopped' : 'running'}: goods=${goodsId}`);
  }

  private async openQueues(): Promise<(QueueSale | DrawSale)[]> {
    const now = Date.now();
    if (now >= this.sales.until) {
      this.sales = {
        list: (await this.goods.openQueues()).filter(isRoomSale),
        until: now + SALES_REFRESH_MS,
      };
    }
    return this.sales.list;
  }
}

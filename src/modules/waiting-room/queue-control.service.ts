import { Injectable, Logger } from '@nestjs/common';
import { orUnavailable } from '../../common/errors/domain-error.js';
import { GoodsService } from '../goods/goods.service.js';
import { QueueScripts, type RoomState } from './queue.scripts.js';
import type { QueueSale } from './room-sale.js';
import { WaitingRoomService } from './waiting-room.service.js';

/** A queue's admission as the operator sees and sets it. */
export interface QueueAdmission {
  goodsId: number;
  paused: boolean;
  admitPerSecond: number;
  admissionTtlSeconds: number;
}

/** A queue as the dashboard shows it. */
export interface QueueBoard extends QueueAdmission {
  /** Buyers not admitted yet. */
  waiting: number;
  /** Admitted buyers who have neither bought nor lapsed. */
  admitted: number;
  expired: number;
  /** Admissions per second over the last ten seconds. */
  admittedPerSecond: number;
  shuffled: boolean;
}

/** A draw sale as the dashboard shows it. */
export interface DrawBoard {
  goodsId: number;
  claimSeconds: number;
  winnersFactor: number;
  /** The entries are ranked. */
  drawn: boolean;
  entries: number;
  /** Purchase rights in force (given, neither used nor lapsed). */
  rightsOut: number;
  /** Rights used by a purchase. */
  claimed: number;
  /** Rights that lapsed unused (each passed to the next entry). */
  lapsed: number;
  /** The rank the next right goes to (1-based); null before the draw or with nobody waiting. */
  waitlistHead: number | null;
  /** Entries still waiting for a right. */
  waitlisted: number;
}

/**
 * The operator's hold on a queue sale's admission: pause it (joining, standings and purchases of
 * those admitted go on), resume it, pace it anew. The change is in MySQL, so that it outlives
 * Redis; the admission job reads it within a second (AdmissionPacerService's list of open queues).
 */
@Injectable()
export class QueueControlService {
  private readonly logger = new Logger(QueueControlService.name);

  constructor(
    private readonly goods: GoodsService,
    private readonly scripts: QueueScripts,
    private readonly room: WaitingRoomService,
  ) {}

  async set(
    goodsId: number,
    change: { paused?: boolean; admitPerSecond?: number },
  ): Promise<QueueAdmission> {
    await this.room.queueSale(goodsId, { fresh: true });
    await orUnavailable('MySQL', () => this.goods.setAdmission(goodsId, change));
    const sale = await this.room.queueSale(goodsId, { fresh: true });
    this.logger.log(
      `queue admission set: goods=${goodsId} paused=${sale.admissionPaused} admitPerSecond=${sale.admitPerSecond}`,
    );
    return admissionOf(sale);
  }

  /** A draw sale's figures for the dashboard (one script call). */
  async drawBoard(
    draw: Pick<DrawBoard, 'goodsId' | 'claimSeconds' | 'winnersFactor'>,
    endAt: Date,
  ): Promise<DrawBoard> {
    const room = await this.scripts.room(draw.goodsId, endAt.getTime());
    return {
      ...draw,
      drawn: room.shuffled,
      entries: room.joined,
      rightsOut: room.deciding,
      claimed: room.used,
      lapsed: room.expired,
      waitlistHead: room.shuffled && room.waiting > 0 ? room.head + 1 : null,
      waitlisted: room.waiting,
    };
  }

  /** The queue's figures for the dashboard (one script call). */
  async board(admission: QueueAdmission, endAt: Date): Promise<QueueBoard> {
    const room: RoomState = await this.scripts.room(admission.goodsId, endAt.getTime());
    return {
      ...admission,
      waiting: room.waiting,
      admitted: room.deciding,
      expired: room.expired,
      admittedPerSecond: room.admittedLast10s / 10,
      shuffled: room.shuffled,
    };
  }
}

function admissionOf(sale: QueueSale): QueueAdmission {
  return {
    goodsId: sale.id,
    paused: sale.admissionPaused,
    admitPerSecond: sale.admitPerSecond,
    admissionTtlSeconds: sale.admissionTtlSeconds,
  };
}

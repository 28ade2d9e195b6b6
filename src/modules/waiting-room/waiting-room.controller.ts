import { Controller, Get, Headers, HttpCode, Param, Post, Sse, SseSignal } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import { CountedAddress } from '../../common/http/client-address.js';
import { QueueStreamsService } from './queue-streams.service.js';
import { ApiErrors, AUTHENTICATED } from '../../common/errors/api-errors.decorator.js';
import type { ErrorCode } from '../../common/errors/domain-error.js';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { CurrentUser, type AuthUser } from '../auth/auth.decorators.js';
import { BlocklistChecked } from '../blocklist/blocklist.hook.js';
import { RateLimit } from '../rate-limit/rate-limit.policy.js';
import { QUEUE_STATES } from './queue.scripts.js';
import { JoinReceiptDto } from './join-receipt.dto.js';
import { WaitingRoomService } from './waiting-room.service.js';

class QueueStatusDto {
  @ApiProperty({ enum: QUEUE_STATES }) state: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'Your place among those still waiting (1: admitted next); null unless WAITING, and before the shuffle at startAt',
  })
  position: number | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Buyers waiting ahead of you' })
  ahead: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'Seconds until your admission at the pace in force (admitPerSecond), 0 once ADMITTED; null when it cannot be known: before the shuffle, while admission is paused or the sale cannot sell, when your place is beyond what the stock lets in now (you are admitted only if someone ahead walks away or a unit comes back), when it would fall after endAt, and once you are not waiting',
  })
  etaSeconds: number | null;
  @ApiPropertyOptional({
    format: 'date-time',
    description:
      'ADMITTED: buy before this (never after endAt). The time to buy is counted only while the sale can sell: while admission is paused, the sale is being rebuilt or Redis cannot be reached, it stands still',
  })
  admittedUntil?: string;
  @ApiProperty({
    description:
      'The state can no longer change: PURCHASED once the purchase is an order, EXPIRED, SOLD_OUT once no unit can come back (no unpaid order left), and every state at endAt. A SOLD_OUT with final false is sold out for now: you keep your place, and a unit that comes back admits the next place',
  })
  final: boolean;
}

class JoinAnswerDto extends QueueStatusDto {
  @ApiProperty({
    type: JoinReceiptDto,
    description:
      'Keep it: after the draw, GET /api/v1/goods/{goodsId}/fairness reveals what your place follows from',
  })
  receipt: JoinReceiptDto;
}

/** The standing's routes (GET, the stream): a queue sale only, read rate limit. */
const QUEUE_READ_ERRORS: ErrorCode[] = [
  ...AUTHENTICATED,
  'VALIDATION_FAILED',
  'GOODS_NOT_FOUND',
  'QUEUE_NOT_OPEN',
  'TOO_MANY_REQUESTS',
];

@ApiTags('seckill')
@ApiBearerAuth()
@Controller('seckill')
export class WaitingRoomController {
  constructor(
    private readonly room: WaitingRoomService,
    private readonly streams: QueueStreamsService,
  ) {}

  @Post(':goodsId/queue')
  @HttpCode(200)
  @RateLimit('token')
  @BlocklistChecked()
  @ApiOperation({
    summary: "Join a queue sale's waiting room (joining again keeps your place)",
    description:
      'From queueOpensAt to the end of the sale. Everyone who joins before startAt is put in a random order at startAt, drawn by commit-and-reveal (GET /api/v1/goods/{goodsId}/fairness; the answer’s receipt is what you check your place with); later joiners queue behind in arrival order. Buyers are admitted in that order, at most admitPerSecond across the service and while those admitted and undecided stay within the remaining stock times QUEUE_ADMIT_STOCK_FACTOR; an admission lasts admissionTtlSeconds. One client address (an IPv6 /64) may put at most QUEUE_MAX_ACCOUNTS_PER_ADDRESS accounts into the room of one sale: past it 429 TOO_MANY_REQUESTS (Retry-After: the end of the sale). 503 UNAVAILABLE with Retry-After while the room is being restored (after a Redis restart): join again then, a place you were told of is kept. 409 QUEUE_NOT_OPEN for a sale without a waiting room or before queueOpensAt, 409 SALE_ENDED after the end.',
  })
  @ApiHeader({
    name: 'X-Seckill-Challenge',
    required: false,
    description:
      'base64 of the JSON {challenge, solution} of a challenge from GET /api/v1/seckill/{goodsId}/challenge; required when SECKILL_REQUIRE_CHALLENGE=true',
  })
  @ApiOkResponse({ type: JoinAnswerDto })
  @ApiErrors(
    ...AUTHENTICATED,
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'GOODS_NOT_FOUND',
    'QUEUE_NOT_OPEN',
    'SALE_ENDED',
    'TOO_MANY_REQUESTS',
  )
  join(
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @CurrentUser() user: AuthUser,
    @Headers('x-seckill-challenge') challenge: string | undefined,
    @CountedAddress() clientAddress: string | null,
  ) {
    return this.room.join(goodsId, user.userId, challenge, clientAddress);
  }

  @Get(':goodsId/queue')
  @RateLimit('read')
  @ApiOperation({
    summary: 'Where you stand in a queue sale’s waiting room',
    description:
      'NOT_JOINED, WAITING (position and ahead once the shuffle at startAt has placed you), ADMITTED (buy before admittedUntil), EXPIRED (the admission lapsed unused), SOLD_OUT (no stock left and nothing in flight; with final false only for now: you keep your place, WAITING again if a cancel or an expiry gives stock back) or PURCHASED. `final` says when the state can no longer change; at endAt every state is final (an unused admission EXPIRED, a buyer still in line SOLD_OUT).',
  })
  @ApiOkResponse({ type: QueueStatusDto })
  @ApiErrors(...QUEUE_READ_ERRORS)
  status(@Param('goodsId', PositiveIntPipe) goodsId: number, @CurrentUser() user: AuthUser) {
    return this.room.status(goodsId, user.userId);
  }

  @Sse(':goodsId/queue/stream')
  @RateLimit('read')
  @ApiOperation({
    summary: 'Where you stand in the waiting room, pushed as it changes (SSE)',
    description:
      'text/event-stream: the JSON of GET /queue at once, then at each change (your place moving up, your admission, its end, your purchase, the stock gone or back, the end of the sale), ending only after a status with final true (a SOLD_OUT for now keeps the stream open): close your EventSource then. Without one it ends after QUEUE_STREAM_LIFETIME_MS (10 min; reconnect), and a comment line (": heartbeat") comes every QUEUE_STREAM_HEARTBEAT_MS (15 s). At most QUEUE_STREAM_MAX_PER_USER (2) streams per user and QUEUE_STREAM_MAX_PER_IP (100) per client address at once, across instances, and QUEUE_STREAM_MAX_PER_INSTANCE (10,000) per instance: beyond any, 429 TOO_MANY_REQUESTS with Retry-After.',
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({
    description:
      'Events: `data: {"state":"WAITING","position":17,"ahead":16,"etaSeconds":4,"final":false}`',
    type: QueueStatusDto,
  })
  @ApiTooManyRequestsResponse({ description: 'Too many open streams, or the read rate limit' })
  @ApiErrors(...QUEUE_READ_ERRORS)
  stream(
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @CurrentUser() user: AuthUser,
    @CountedAddress() clientAddress: string | null,
    @SseSignal() ended: AbortSignal,
  ) {
    return this.streams.open(goodsId, user.userId, clientAddress, ended);
  }
}

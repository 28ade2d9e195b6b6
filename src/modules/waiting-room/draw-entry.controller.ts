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
import { ApiErrors, AUTHENTICATED } from '../../common/errors/api-errors.decorator.js';
import type { ErrorCode } from '../../common/errors/domain-error.js';
import { CountedAddress } from '../../common/http/client-address.js';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { CurrentUser, type AuthUser } from '../auth/auth.decorators.js';
import { BlocklistChecked } from '../blocklist/blocklist.hook.js';
import { RateLimit } from '../rate-limit/rate-limit.policy.js';
import { DrawEntryService, ENTRY_STATES } from './draw-entry.service.js';
import { QueueStreamsService } from './queue-streams.service.js';
import { JoinReceiptDto } from './join-receipt.dto.js';

class EntryStatusDto {
  @ApiProperty({
    enum: ENTRY_STATES,
    description:
      'NOT_ENTERED; ENTERED (before the draw); SELECTED (you hold a purchase right: buy before rightUntil); WAITLISTED (a right reaches you once every entry ranked before you had one: those lapsing unused and units coming back pass down the list); NOT_SELECTED (no right can reach you any more); PURCHASED; EXPIRED (your right lapsed unused)',
  })
  state: string;
  @ApiProperty({
    type: Number,
    nullable: true,
    description:
      'WAITLISTED: your rank in the draw’s order (1: the first entry drawn; the export’s place + 1); null otherwise',
  })
  rank: number | null;
  @ApiProperty({
    type: Number,
    nullable: true,
    description: 'WAITLISTED: entries ranked before you still waiting for a right',
  })
  ahead: number | null;
  @ApiPropertyOptional({
    format: 'date-time',
    description:
      'SELECTED: buy before this (claimSeconds from the draw, or from startAt for a right given before it; never after endAt). It stands still while the sale cannot sell (paused, being rebuilt, Redis unreachable)',
  })
  rightUntil?: string;
  @ApiProperty({
    description:
      'The state can no longer change: PURCHASED once the purchase is an order, EXPIRED, NOT_SELECTED, and every state at endAt',
  })
  final: boolean;
}

class EntryAnswerDto extends EntryStatusDto {
  @ApiProperty({
    type: JoinReceiptDto,
    description:
      'Keep it: after the draw, GET /api/v1/goods/{goodsId}/fairness reveals what your rank follows from',
  })
  receipt: JoinReceiptDto;
}

/** The standing's routes (GET, the stream): a draw sale only, read rate limit. */
const ENTRY_READ_ERRORS: ErrorCode[] = [
  ...AUTHENTICATED,
  'VALIDATION_FAILED',
  'GOODS_NOT_FOUND',
  'ENTRIES_CLOSED',
  'TOO_MANY_REQUESTS',
  'UNAVAILABLE',
];

@ApiTags('seckill')
@ApiBearerAuth()
@Controller('seckill')
export class DrawEntryController {
  constructor(
    private readonly entries: DrawEntryService,
    private readonly streams: QueueStreamsService,
  ) {}

  @Post(':goodsId/entry')
  @HttpCode(200)
  @RateLimit('token')
  @BlocklistChecked()
  @ApiOperation({
    summary: 'Enter a draw sale (entering again keeps your entry)',
    description:
      'From entriesOpenAt until entriesCloseAt, once per account. At entriesCloseAt a draw ranks every entry by commit-and-reveal (GET /api/v1/goods/{goodsId}/fairness; the answer’s receipt is what you check your rank with). The first stock × winnersFactor entries get a purchase right for claimSeconds (counted from startAt for rights given before it); a right that lapses unused, and a unit that comes back (a cancel, an expiry) before the end, passes to the next entry in the draw’s order, while the rights in force stay within the units left × winnersFactor. Only a holder of a right in force may buy (403 NOT_SELECTED otherwise). One client address (an IPv6 /64) may enter at most QUEUE_MAX_ACCOUNTS_PER_ADDRESS accounts into one draw: past it 429 TOO_MANY_REQUESTS. 503 UNAVAILABLE with Retry-After while the entries are being restored (after a Redis restart): enter again then, an entry you were told of is kept. 409 ENTRIES_CLOSED outside the window, or for a sale that is not a draw.',
  })
  @ApiHeader({
    name: 'X-Seckill-Challenge',
    required: false,
    description:
      'base64 of the JSON {challenge, solution} of a challenge from GET /api/v1/seckill/{goodsId}/challenge; required when SECKILL_REQUIRE_CHALLENGE=true',
  })
  @ApiOkResponse({ type: EntryAnswerDto })
  @ApiErrors(
    ...AUTHENTICATED,
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'GOODS_NOT_FOUND',
    'ENTRIES_CLOSED',
    'TOO_MANY_REQUESTS',
    'UNAVAILABLE',
  )
  enter(
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @CurrentUser() user: AuthUser,
    @Headers('x-seckill-challenge') challenge: string | undefined,
    @CountedAddress() clientAddress: string | null,
  ) {
    return this.entries.enter(goodsId, user.userId, challenge, clientAddress);
  }

  @Get(':goodsId/entry')
  @RateLimit('read')
  @ApiOperation({ summary: 'Where your entry in a draw sale stands' })
  @ApiOkResponse({ type: EntryStatusDto })
  @ApiErrors(...ENTRY_READ_ERRORS)
  status(@Param('goodsId', PositiveIntPipe) goodsId: number, @CurrentUser() user: AuthUser) {
    return this.entries.status(goodsId, user.userId);
  }

  @Sse(':goodsId/entry/stream')
  @RateLimit('read')
  @ApiOperation({
    summary: 'Where your entry stands, pushed as it changes (SSE)',
    description:
      'text/event-stream: the JSON of GET /entry at once, then at each change (the draw, your rank moving up, your right, its end, your purchase, the stock gone or back, the end of the sale), ending only after a status with final true. The same bounds as the queue stream (QUEUE_STREAM_*): without a final status it ends after QUEUE_STREAM_LIFETIME_MS (reconnect); beyond the open streams allowed, 429 TOO_MANY_REQUESTS with Retry-After.',
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({
    description: 'Events: `data: {"state":"WAITLISTED","rank":120,"ahead":19,"final":false}`',
    type: EntryStatusDto,
  })
  @ApiTooManyRequestsResponse({ description: 'Too many open streams, or the read rate limit' })
  @ApiErrors(...ENTRY_READ_ERRORS)
  stream(
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @CurrentUser() user: AuthUser,
    @CountedAddress() clientAddress: string | null,
    @SseSignal() ended: AbortSignal,
  ) {
    return this.streams.openEntry(goodsId, user.userId, clientAddress, ended);
  }
}

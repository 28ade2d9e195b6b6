import {
  Body,
  Controller,
  Get,
  Headers,
  HttpCode,
  Param,
  Post,
  Sse,
  SseSignal,
} from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBearerAuth,
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiProperty,
  ApiPropertyOptional,
  ApiServiceUnavailableResponse,
  ApiTags,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import { BodyLimit } from '../../common/http/route-config.js';
import { CountedAddress } from '../../common/http/client-address.js';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { CurrentUser, type AuthUser } from '../auth/auth.decorators.js';
import { BlocklistChecked } from '../blocklist/blocklist.hook.js';
import { RateLimit } from '../rate-limit/rate-limit.policy.js';
import { SoldOutShortcut } from '../sale-store/sold-out-memo.store.js';
import { Sheddable } from '../overload/shed-overload.hook.js';
import { PurchaseBodyDto } from './purchase-body.dto.js';
import { PURCHASE_BODY_LIMIT_BYTES, PurchaseBodyPipe } from './purchase-body.pipe.js';
import { parseIdempotencyKey } from './idempotency.js';
import { PurchaseTokenService } from './purchase-token.service.js';
import { PurchaseRequestService } from './purchase-request.service.js';
import { PurchaseResultService } from './purchase-result.service.js';
import { ResultStreamsService } from './result-streams.service.js';
import { ApiErrors, AUTHENTICATED } from '../../common/errors/api-errors.decorator.js';
import type { ErrorCode } from '../../common/errors/domain-error.js';
import { RequestTrace } from '../../infra/tracing/request-trace.decorator.js';
import type { Trace } from '../../infra/tracing/tracing.js';

class PurchaseAcceptedDto {
  @ApiProperty({ enum: ['QUEUED'] }) status: string;
  @ApiProperty({ format: 'uuid' }) requestId: string;
}

class PurchaseUnavailableDto {
  @ApiProperty({ enum: [503] }) statusCode: number;
  @ApiProperty({
    enum: ['UNAVAILABLE', 'OVERLOADED'],
    description:
      'UNAVAILABLE: a dependency is down. OVERLOADED: the instance is past what it can answer in time and shed the purchase at once; come back after Retry-After (longer while many are shed; asking again on this instance before it passed is shed again with the time left).',
  })
  code: string;
  @ApiProperty() message: string;
  @ApiPropertyOptional({
    format: 'uuid',
    description:
      'Only when the outcome is unknown (a reply lost on its way from Redis or MySQL, or the void of an unconfirmed publish not recorded in MySQL): this purchase may still become an order. GET /api/v1/seckill/{goodsId}/result tells its outcome once known (SUCCESS with this requestId, or FAILED/NONE). Without it, nothing was taken.',
  })
  requestId?: string;
}

class PurchaseTokenDto {
  @ApiProperty({ description: 'Send as X-Seckill-Token; good for one purchase of this goods' })
  token: string;
  @ApiProperty({ format: 'date-time' }) expiresAt: string;
}

class PurchaseResultDto {
  @ApiProperty({ enum: ['NONE', 'QUEUED', 'SUCCESS', 'FAILED'] }) status: string;
  @ApiPropertyOptional({ format: 'uuid' }) requestId?: string;
  @ApiPropertyOptional() orderNo?: string;
  @ApiPropertyOptional({ description: 'Why a FAILED purchase failed' }) reason?: string;
}

/** The challenge and token routes: answered only in the sale's window, to an unblocked buyer. */
const SALE_WINDOW_ERRORS: ErrorCode[] = [
  ...AUTHENTICATED,
  'VALIDATION_FAILED',
  'FORBIDDEN',
  'GOODS_NOT_FOUND',
  'SALE_NOT_STARTED',
  'SALE_ENDED',
  'TOO_MANY_REQUESTS',
];

@ApiTags('seckill')
@ApiBearerAuth()
@Controller('seckill')
export class SeckillController {
  constructor(
    private readonly requests: PurchaseRequestService,
    private readonly results: PurchaseResultService,
    private readonly tokens: PurchaseTokenService,
    private readonly streams: ResultStreamsService,
  ) {}

  @Get(':goodsId/challenge')
  @RateLimit('token')
  @BlocklistChecked()
  @ApiOperation({
    summary:
      'An ALTCHA v2 proof-of-work challenge for the purchase token (required when SECKILL_REQUIRE_CHALLENGE=true)',
    description:
      "altcha-lib's createChallenge result (PBKDF2/SHA-256, cost CHALLENGE_COST). Solve it (the ALTCHA widget, or altcha-lib's solveChallenge) and send base64 of the JSON {challenge, solution} as X-Seckill-Challenge on GET /api/v1/seckill/{goodsId}/token. Bound to you and this goods, valid once, expires after CHALLENGE_TTL_MS.",
  })
  @ApiOkResponse({
    description: '{parameters: {algorithm, nonce, salt, cost, keyLength, keyPrefix, …}, signature}',
  })
  @ApiErrors(...SALE_WINDOW_ERRORS)
  challenge(@Param('goodsId', PositiveIntPipe) goodsId: number, @CurrentUser() user: AuthUser) {
    return this.tokens.challenge(goodsId, user.userId);
  }

  @Get(':goodsId/token')
  @RateLimit('token')
  @BlocklistChecked()
  @ApiOperation({
    summary: 'A one-time purchase token for this goods (required when SECKILL_REQUIRE_TOKEN=true)',
    description:
      'Answers only during the sale window (or SECKILL_TOKEN_EARLY_MS before it): 409 SALE_NOT_STARTED / SALE_ENDED otherwise, 404 GOODS_NOT_FOUND. The token is bound to you and this goods, expires after SECKILL_TOKEN_TTL_MS, and is used up by one purchase that gets a final answer (202, or 409 SOLD_OUT / ALREADY_PURCHASED / SALE_ENDED); a 503 or another refusal leaves it usable for the retry.',
  })
  @ApiHeader({
    name: 'X-Seckill-Challenge',
    required: false,
    description:
      "base64 of the JSON {challenge, solution} of a challenge from GET /api/v1/seckill/{goodsId}/challenge; required when SECKILL_REQUIRE_CHALLENGE=true (403 FORBIDDEN when missing, wrong, expired, reused or another user's)",
  })
  @ApiOkResponse({ type: PurchaseTokenDto })
  @ApiErrors(...SALE_WINDOW_ERRORS, 'NOT_ADMITTED', 'NOT_SELECTED')
  token(
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @CurrentUser() user: AuthUser,
    @Headers('x-seckill-challenge') challenge: string | undefined,
  ) {
    return this.tokens.issue(goodsId, user.userId, challenge);
  }

  @Post(':goodsId')
  @HttpCode(202)
  @RateLimit('purchase')
  @BlocklistChecked()
  @SoldOutShortcut()
  @Sheddable()
  @BodyLimit(PURCHASE_BODY_LIMIT_BYTES)
  @ApiOperation({
    summary: 'Buy: takes stock at once and queues the order (poll the result)',
    description:
      "Errors: 409 SOLD_OUT, ALREADY_PURCHASED, DUPLICATE_REQUEST, SALE_NOT_STARTED, SALE_ENDED, NOT_PREHEATED; 403 FORBIDDEN (purchase token missing, invalid, another user's or used); 403 NOT_ADMITTED (a queue sale: its waiting room has not admitted you, or your admission lapsed or was used); 403 NOT_SELECTED (a draw sale: you hold no purchase right in force); 413 PAYLOAD_TOO_LARGE (a body over 1 KiB); 429 TOO_MANY_REQUESTS (Retry-After); 503 UNAVAILABLE: nothing taken, unless the body carries a requestId (the outcome is unknown: poll the result); 503 OVERLOADED (Retry-After): the instance is past what it can answer in time and shed the purchase at once, nothing taken.",
  })
  @ApiHeader({
    name: 'X-Seckill-Token',
    required: false,
    description:
      'One-time token from GET /api/v1/seckill/{goodsId}/token; required when SECKILL_REQUIRE_TOKEN=true',
  })
  @ApiHeader({
    name: 'Idempotency-Key',
    required: false,
    description:
      '1–64 of [A-Za-z0-9_-], scoped to you. A retry with the same key gets the first answer (202, or 409 SOLD_OUT / ALREADY_PURCHASED / SALE_ENDED) without buying again; while the first is still running, 409 DUPLICATE_REQUEST; the same key for another goods or quantity, 400.',
  })
  @ApiBody({ type: PurchaseBodyDto, required: false })
  @ApiAcceptedResponse({ type: PurchaseAcceptedDto })
  @ApiServiceUnavailableResponse({
    type: PurchaseUnavailableDto,
    description:
      'A dependency is down (UNAVAILABLE), or the instance is past what it can answer in time (OVERLOADED, with Retry-After). Nothing was taken, unless `requestId` is present: then the outcome is unknown and the result route tells it.',
  })
  // Its 503 is PurchaseUnavailableDto above: the body may carry a requestId.
  @ApiErrors(
    'VALIDATION_FAILED',
    'UNAUTHORIZED',
    'FORBIDDEN',
    'GOODS_NOT_FOUND',
    'SOLD_OUT',
    'ALREADY_PURCHASED',
    'DUPLICATE_REQUEST',
    'SALE_NOT_STARTED',
    'SALE_ENDED',
    'NOT_PREHEATED',
    'NOT_ADMITTED',
    'NOT_SELECTED',
    'PAYLOAD_TOO_LARGE',
    'TOO_MANY_REQUESTS',
  )
  purchase(
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @Body(PurchaseBodyPipe) quantity: number,
    @CurrentUser() user: AuthUser,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Headers('x-seckill-token') token: string | undefined,
    @RequestTrace() trace: Trace,
  ) {
    return this.requests.submit(goodsId, user.userId, quantity, {
      idempotencyKey: parseIdempotencyKey(idempotencyKey),
      token,
      trace,
    });
  }

  @Get(':goodsId/result')
  @RateLimit('read')
  @ApiOperation({
    summary: 'The outcome of your latest purchase of this goods',
    description:
      "After a purchase's 503 carrying a requestId: SUCCESS with that requestId once it became an order; FAILED, NONE or another purchase's result once it surely did not. 503 UNAVAILABLE while Redis is unreachable, or the sale is being rebuilt after a Redis restart, and MySQL holds no order of yours.",
  })
  @ApiOkResponse({ type: PurchaseResultDto })
  @ApiErrors(...AUTHENTICATED, 'VALIDATION_FAILED', 'TOO_MANY_REQUESTS')
  result(@Param('goodsId', PositiveIntPipe) goodsId: number, @CurrentUser() user: AuthUser) {
    return this.results.result(goodsId, user.userId);
  }

  @Sse(':goodsId/result/stream')
  @RateLimit('read')
  @ApiOperation({
    summary: 'The outcome of your latest purchase of this goods, pushed as it changes (SSE)',
    description:
      'text/event-stream. The current result at once, then each change, each as an event whose data is the JSON of GET /result; the stream ends after a final one (SUCCESS with orderNo, or FAILED): close your EventSource then, or it reconnects and gets the final result again. Without a final result it ends after RESULT_STREAM_LIFETIME_MS (10 min; reconnect), and a comment line (": heartbeat") comes every RESULT_STREAM_HEARTBEAT_MS (15 s). At most RESULT_STREAM_MAX_PER_USER (2) streams per user and RESULT_STREAM_MAX_PER_IP (100) per client address at once, across instances, and RESULT_STREAM_MAX_PER_INSTANCE (10,000) per instance: beyond any, 429 TOO_MANY_REQUESTS with Retry-After. Counts against the read rate limit when it opens. 401 without a token, 404 GOODS_NOT_FOUND, 503 UNAVAILABLE while Redis is unreachable or the sale is being rebuilt after a Redis restart.',
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({
    description:
      'Events: `id: <n>` and `data: {"status":"QUEUED","requestId":"…"}`; the last one final, e.g. `data: {"status":"SUCCESS","requestId":"…","orderNo":"…"}`',
    type: PurchaseResultDto,
  })
  @ApiTooManyRequestsResponse({ description: 'Too many open streams, or the read rate limit' })
  @ApiErrors(...AUTHENTICATED, 'VALIDATION_FAILED', 'GOODS_NOT_FOUND', 'TOO_MANY_REQUESTS')
  resultStream(
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @CurrentUser() user: AuthUser,
    @CountedAddress() clientAddress: string | null,
    @SseSignal() ended: AbortSignal,
  ) {
    return this.streams.open(goodsId, user.userId, clientAddress, ended);
  }
}

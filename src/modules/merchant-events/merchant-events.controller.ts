import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiBody,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiPropertyOptional,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import { ADMIN, ApiErrors } from '../../common/errors/api-errors.decorator.js';
import { DomainError } from '../../common/errors/domain-error.js';
import { AdminOnly } from '../auth/auth.decorators.js';
import { MerchantEventRepository } from './merchant-event.repository.js';

class MerchantEventViewDto {
  @ApiProperty() eventId: string;
  @ApiProperty() orderNo: string;
  @ApiProperty() goodsId: number;
  @ApiProperty() type: string;
  @ApiProperty() attempts: number;
  @ApiProperty({ format: 'date-time' }) createdAt: string;
  @ApiPropertyOptional({ format: 'date-time', nullable: true }) parkedAt: string | null;
  @ApiPropertyOptional({ nullable: true }) lastError: string | null;
}

class RetryDto {
  @ApiPropertyOptional({
    type: [String],
    description: 'The parked events to send again; all of them when left out',
  })
  eventIds?: string[];
  @ApiPropertyOptional({ description: "Only this sale's parked events" })
  goodsId?: number;
}

class RetriedDto {
  @ApiProperty({ description: 'How many parked events went back to delivery' }) retried: number;
}

const LIST_LIMIT = 200;
const MAX_RETRY_IDS = 1_000;
const EVENT_ID = /^[0-9a-f-]{36}$/;

function readRetry(body: unknown): { eventIds?: string[]; goodsId?: number } {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) {
    throw new DomainError('VALIDATION_FAILED', 'The body must be an object');
  }
  const { eventIds, goodsId } = body as { eventIds?: unknown; goodsId?: unknown };
  if (goodsId !== undefined && !(Number.isSafeInteger(goodsId) && (goodsId as number) > 0)) {
    throw new DomainError('VALIDATION_FAILED', 'goodsId must be a positive integer');
  }
  const only = { goodsId: goodsId as number | undefined };
  if (eventIds === undefined) return only;
  if (
    !Array.isArray(eventIds) ||
    eventIds.length > MAX_RETRY_IDS ||
    !eventIds.every((id) => typeof id === 'string' && EVENT_ID.test(id))
  ) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `eventIds must be a list of at most ${MAX_RETRY_IDS} event ids`,
    );
  }
  return { ...only, eventIds: eventIds as string[] };
}

@ApiTags('admin')
@ApiBearerAuth()
@Controller('admin/merchant-events')
export class MerchantEventsController {
  constructor(private readonly events: MerchantEventRepository) {}

  @Get()
  @AdminOnly()
  @ApiOperation({ summary: "Order events not delivered to the merchant's webhook, oldest first" })
  @ApiQuery({ name: 'state', enum: ['parked', 'pending'], required: false })
  @ApiOkResponse({ type: [MerchantEventViewDto] })
  @ApiErrors('VALIDATION_FAILED', ...ADMIN)
  list(@Query('state') state = 'parked') {
    if (state !== 'parked' && state !== 'pending') {
      throw new DomainError('VALIDATION_FAILED', 'state must be parked or pending');
    }
    return this.events.list(state, LIST_LIMIT);
  }

  @Post('retry')
  @AdminOnly()
  @HttpCode(200)
  @ApiOperation({
    summary: 'Send parked order events again (retried for another MERCHANT_WEBHOOK_RETRY_SECONDS)',
  })
  @ApiBody({ type: RetryDto, required: false })
  @ApiOkResponse({ type: RetriedDto })
  @ApiErrors('VALIDATION_FAILED', ...ADMIN)
  async retry(@Body() body: unknown): Promise<RetriedDto> {
    return { retried: await this.events.retryParked(readRetry(body)) };
  }
}

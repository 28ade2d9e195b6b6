import { Controller, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DomainError } from '../../common/errors/domain-error.js';
import { CurrentUser, type AuthUser } from '../auth/auth.decorators.js';
import { RateLimit } from '../rate-limit/rate-limit.policy.js';
import { OrderViewDto } from './orders.dto.js';
import { OrderLifecycleService } from './order-lifecycle.service.js';
import { OrdersService } from './orders.service.js';
import { ApiErrors, AUTHENTICATED } from '../../common/errors/api-errors.decorator.js';

class OrderStatusDto {
  @ApiProperty() orderNo: string;
  @ApiProperty({ enum: ['PAID', 'CANCELLED'] }) status: string;
}

@ApiTags('orders')
@ApiBearerAuth()
@RateLimit('read')
@Controller('orders')
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly lifecycle: OrderLifecycleService,
  ) {}

  @Get(':orderNo')
  @ApiOperation({
    summary: 'An order, for its owner or an admin',
    description:
      'Read on the primary: it shows every change made before it. With `mayLag=true` (an order list, a status poll) it may be read on the read replica (DATABASE_REPLICA_URL) while that is within DATABASE_REPLICA_MAX_LAG_MS of the primary; the `Seckill-Read-From` header says where it was read.',
  })
  @ApiQuery({ name: 'mayLag', required: false, enum: ['true', 'false'] })
  @ApiOkResponse({
    type: OrderViewDto,
    headers: { 'Seckill-Read-From': { description: '`primary` or `replica`' } },
  })
  @ApiErrors(
    ...AUTHENTICATED,
    'VALIDATION_FAILED',
    'FORBIDDEN',
    'ORDER_NOT_FOUND',
    'TOO_MANY_REQUESTS',
  )
  async get(
    @Param('orderNo') orderNo: string,
    @Query('mayLag') mayLag: unknown,
    @CurrentUser() user: AuthUser,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const viewer = { userId: user.userId, admin: user.admin };
    const read = await this.orders.getForViewer(orderNo, viewer, readsMayLag(mayLag));
    void reply.header('Seckill-Read-From', read.from);
    return read.value;
  }

  @Post(':orderNo/pay')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'Pay your order without a provider (tests and simple setups); paying a paid order again is 200',
    description:
      "A stand-in: a shop takes payment through the provider's signed webhook (POST /api/v1/payments/webhook, docs/payments.md). 409 ORDER_CANCELLED once cancelled or past its expireAt.",
  })
  @ApiOkResponse({ type: OrderStatusDto })
  @ApiErrors(
    ...AUTHENTICATED,
    'FORBIDDEN',
    'ORDER_NOT_FOUND',
    'ORDER_CANCELLED',
    'TOO_MANY_REQUESTS',
  )
  pay(@Param('orderNo') orderNo: string, @CurrentUser() user: AuthUser) {
    return this.lifecycle.pay(orderNo, user.userId);
  }

  @Post(':orderNo/cancel')
  @HttpCode(200)
  @ApiOperation({
    summary: 'Cancel your unpaid order; its stock goes back (once, however often you cancel)',
    description: '409 ORDER_PAID for a paid order.',
  })
  @ApiOkResponse({ type: OrderStatusDto })
  @ApiErrors(...AUTHENTICATED, 'FORBIDDEN', 'ORDER_NOT_FOUND', 'ORDER_PAID', 'TOO_MANY_REQUESTS')
  cancel(@Param('orderNo') orderNo: string, @CurrentUser() user: AuthUser) {
    return this.lifecycle.cancelByOwner(orderNo, user.userId);
  }
}

/** `mayLag`: absent or `false` (on the primary), `true`; anything else is refused. */
function readsMayLag(value: unknown): boolean {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  throw new DomainError('VALIDATION_FAILED', 'mayLag must be true or false');
}

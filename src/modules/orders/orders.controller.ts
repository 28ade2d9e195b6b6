import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
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
  @ApiOperation({ summary: 'An order, for its owner or an admin' })
  @ApiOkResponse({ type: OrderViewDto })
  @ApiErrors(...AUTHENTICATED, 'FORBIDDEN', 'ORDER_NOT_FOUND', 'TOO_MANY_REQUESTS')
  get(@Param('orderNo') orderNo: string, @CurrentUser() user: AuthUser) {
    return this.orders.getForViewer(orderNo, { userId: user.userId, admin: user.admin });
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

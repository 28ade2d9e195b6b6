import { Controller, Get, Param } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentUser, type AuthUser } from '../auth/auth.decorators.js';
import { OrderViewDto } from './orders.dto.js';
import { OrdersService } from './orders.service.js';

@ApiTags('orders')
@ApiBearerAuth()
@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  @Get(':orderNo')
  @ApiOperation({ summary: 'An order, for its owner or an admin' })
  @ApiOkResponse({ type: OrderViewDto })
  get(@Param('orderNo') orderNo: string, @CurrentUser() user: AuthUser) {
    return this.orders.getForViewer(orderNo, { userId: user.userId, admin: user.admin });
  }
}

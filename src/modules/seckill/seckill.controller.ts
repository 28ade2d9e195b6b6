import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiAcceptedResponse,
  ApiBearerAuth,
  ApiBody,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
} from '@nestjs/swagger';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { CurrentUser, type AuthUser } from '../auth/auth.decorators.js';
import { RateLimit } from '../rate-limit/rate-limit.policy.js';
import { PurchaseBodyDto, PurchaseBodyPipe } from './purchase-body.pipe.js';
import { PurchaseService } from './purchase.service.js';

class PurchaseAcceptedDto {
  @ApiProperty({ enum: ['QUEUED'] }) status: string;
  @ApiProperty({ format: 'uuid' }) requestId: string;
}

class PurchaseResultDto {
  @ApiProperty({ enum: ['NONE', 'QUEUED', 'SUCCESS', 'FAILED'] }) status: string;
  @ApiPropertyOptional({ format: 'uuid' }) requestId?: string;
  @ApiPropertyOptional() orderNo?: string;
  @ApiPropertyOptional({ description: 'Why a FAILED purchase failed' }) reason?: string;
}

@ApiTags('seckill')
@ApiBearerAuth()
@Controller('seckill')
export class SeckillController {
  constructor(private readonly purchases: PurchaseService) {}

  @Post(':goodsId')
  @HttpCode(202)
  @RateLimit('purchase')
  @ApiOperation({
    summary: 'Buy: takes stock at once and queues the order (poll the result)',
    description:
      'Errors: 409 SOLD_OUT, ALREADY_PURCHASED, DUPLICATE_REQUEST, SALE_NOT_STARTED, SALE_ENDED, NOT_PREHEATED; 503 UNAVAILABLE (nothing taken).',
  })
  @ApiBody({ type: PurchaseBodyDto, required: false })
  @ApiAcceptedResponse({ type: PurchaseAcceptedDto })
  purchase(
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @Body(PurchaseBodyPipe) quantity: number,
    @CurrentUser() user: AuthUser,
  ) {
    return this.purchases.purchase(goodsId, user.userId, quantity);
  }

  @Get(':goodsId/result')
  @RateLimit('read')
  @ApiOperation({ summary: 'The outcome of your latest purchase of this goods' })
  @ApiOkResponse({ type: PurchaseResultDto })
  result(@Param('goodsId', PositiveIntPipe) goodsId: number, @CurrentUser() user: AuthUser) {
    return this.purchases.result(goodsId, user.userId);
  }
}

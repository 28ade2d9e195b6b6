import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { strictValidation } from '../../common/pipes/validation.pipe.js';
import { AdminOnly, Public } from '../auth/auth.decorators.js';
import { RateLimit } from '../rate-limit/rate-limit.policy.js';
import { CreateGoodsDto, GoodsCreatedDto, GoodsViewDto } from '../goods/goods.dto.js';
import { GoodsService } from '../goods/goods.service.js';
import { SaleViewService } from './sale-view.service.js';
import { ADMIN, ApiErrors } from '../../common/errors/api-errors.decorator.js';

@ApiTags('goods')
@Controller()
export class GoodsController {
  constructor(
    private readonly goods: GoodsService,
    private readonly sales: SaleViewService,
  ) {}

  @Post('admin/goods')
  @HttpCode(201)
  @AdminOnly()
  @ApiBearerAuth()
  @ApiOperation({ summary: 'Create a sale (admin)' })
  @ApiCreatedResponse({ type: GoodsCreatedDto })
  @ApiErrors(...ADMIN, 'VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE')
  create(@Body(strictValidation) body: CreateGoodsDto): Promise<GoodsCreatedDto> {
    return this.goods.create(body);
  }

  @Get('goods/:goodsId')
  @Public()
  @RateLimit('read')
  @ApiOperation({ summary: 'A sale with its live remaining stock and status' })
  @ApiOkResponse({ type: GoodsViewDto })
  @ApiErrors('VALIDATION_FAILED', 'GOODS_NOT_FOUND', 'TOO_MANY_REQUESTS', 'UNAVAILABLE')
  view(@Param('goodsId', PositiveIntPipe) goodsId: number): Promise<GoodsViewDto> {
    return this.sales.view(goodsId);
  }
}

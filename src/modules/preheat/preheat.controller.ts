import { Controller, HttpCode, Param, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { AdminOnly } from '../auth/auth.decorators.js';
import { PreheatService } from './preheat.service.js';
import { ADMIN, ApiErrors } from '../../common/errors/api-errors.decorator.js';

class PreheatResultDto {
  @ApiProperty() goodsId: number;
  @ApiProperty({ description: 'Stock now live in Redis' }) stock: number;
  @ApiProperty({ description: 'false when Redis already held the sale and was left alone' })
  loaded: boolean;
}

@ApiTags('admin')
@ApiBearerAuth()
@Controller('admin/goods')
export class PreheatController {
  constructor(private readonly preheat: PreheatService) {}

  @Post(':goodsId/preheat')
  @HttpCode(200)
  @AdminOnly()
  @ApiOperation({ summary: 'Load a sale into Redis (idempotent; never resets a live sale)' })
  @ApiOkResponse({ type: PreheatResultDto })
  @ApiErrors(...ADMIN, 'VALIDATION_FAILED', 'GOODS_NOT_FOUND')
  run(@Param('goodsId', PositiveIntPipe) goodsId: number) {
    return this.preheat.preheat(goodsId);
  }
}

import { Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
} from '@nestjs/swagger';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { AdminOnly } from '../auth/auth.decorators.js';
import { ReconcileRepairService } from './reconcile-repair.service.js';
import { ReconcileService } from './reconcile.service.js';
import { ADMIN, ApiErrors } from '../../common/errors/api-errors.decorator.js';

class OrderQuantitiesDto {
  @ApiProperty() pendingPayment: number;
  @ApiProperty() paid: number;
  @ApiProperty() cancelled: number;
  @ApiProperty({ description: 'Paid after the cancel, no unit left to take again: no stock held' })
  refundRequired: number;
}

class DriftDto {
  @ApiPropertyOptional({ nullable: true }) redis: number | null;
  @ApiProperty() db: number;
}

class ReconcileReportDto {
  @ApiProperty() goodsId: number;
  @ApiProperty() totalStock: number;
  @ApiProperty() dbStock: number;
  @ApiPropertyOptional({ nullable: true, description: 'null when Redis does not hold the sale' })
  redisStock: number | null;
  @ApiProperty({
    enum: ['LOADED', 'NOT_LOADED'],
    description:
      'Whether Redis holds the sale (stock and meta of every bucket); NOT_LOADED is never consistent',
  })
  redisState: 'LOADED' | 'NOT_LOADED';
  @ApiProperty({ description: 'Quantity Redis holds as bought' }) buyers: number;
  @ApiProperty({ type: OrderQuantitiesDto }) orders: OrderQuantitiesDto;
  @ApiProperty({ description: 'Accepted (202) but not yet written to MySQL' }) inFlight: number;
  @ApiProperty() consistent: boolean;
  @ApiProperty({ type: DriftDto }) drift: DriftDto;
}

class RepairFoundDto {
  @ApiProperty({
    description:
      'Redis held the sale and its reading before the repair drifted, unexplained by restocks under way',
  })
  drifted: boolean;
  @ApiProperty({
    description: "Cancels whose Redis restock is under way explain the reading's gap",
  })
  settling: boolean;
}

class RepairReportDto {
  @ApiProperty() goodsId: number;
  @ApiProperty({
    type: ReconcileReportDto,
    description: 'The reading found under the lock (read again while it drifts)',
  })
  before: ReconcileReportDto;
  @ApiProperty({ type: RepairFoundDto }) found: RepairFoundDto;
  @ApiProperty({ type: ReconcileReportDto }) after: ReconcileReportDto;
}

@ApiTags('admin')
@ApiBearerAuth()
@Controller('admin/goods')
export class ReconcileController {
  constructor(
    private readonly reconcile: ReconcileService,
    private readonly repairs: ReconcileRepairService,
  ) {}

  @Get(':goodsId/reconcile')
  @AdminOnly()
  @ApiOperation({
    summary:
      'Do MySQL and Redis agree? (redisStock + active + inFlight = total = dbStock + active)',
  })
  @ApiOkResponse({ type: ReconcileReportDto })
  @ApiErrors(...ADMIN, 'VALIDATION_FAILED', 'GOODS_NOT_FOUND')
  report(@Param('goodsId', PositiveIntPipe) goodsId: number) {
    return this.reconcile.reconcile(goodsId);
  }

  @Post(':goodsId/reconcile/repair')
  @HttpCode(200)
  @AdminOnly()
  @ApiOperation({
    summary: 'Rebuild the Redis stock and buyers from MySQL plus what is in flight (safe live)',
  })
  @ApiOkResponse({ type: RepairReportDto })
  @ApiErrors(...ADMIN, 'VALIDATION_FAILED', 'GOODS_NOT_FOUND', 'NOT_PREHEATED')
  repair(@Param('goodsId', PositiveIntPipe) goodsId: number) {
    return this.repairs.repair(goodsId);
  }
}

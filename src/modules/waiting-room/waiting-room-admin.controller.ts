import { Body, Controller, HttpCode, Param, Patch, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { IsInt, Max, Min } from 'class-validator';
import { ADMIN, ApiErrors } from '../../common/errors/api-errors.decorator.js';
import type { ErrorCode } from '../../common/errors/domain-error.js';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { strictValidation } from '../../common/pipes/validation.pipe.js';
import { MAX_ADMIT_PER_SECOND } from '../goods/goods.dto.js';
import { AdminOnly } from '../auth/auth.decorators.js';
import { QueueControlService } from './queue-control.service.js';

class QueuePaceDto {
  @ApiProperty({
    example: 200,
    description: 'The most buyers admitted in any second, across every instance',
  })
  @IsInt()
  @Min(1)
  @Max(MAX_ADMIT_PER_SECOND)
  admitPerSecond: number;
}

class QueueAdmissionDto {
  @ApiProperty() goodsId: number;
  @ApiProperty({ description: 'Admission paused by the operator' }) paused: boolean;
  @ApiProperty() admitPerSecond: number;
  @ApiProperty() admissionTtlSeconds: number;
}

const QUEUE_ADMIN_ERRORS: ErrorCode[] = [
  ...ADMIN,
  'VALIDATION_FAILED',
  'GOODS_NOT_FOUND',
  'QUEUE_NOT_OPEN',
];

/**
 * The operator's hold on a queue sale's admission (QueueControlService): within a second on every
 * instance, kept in MySQL.
 */
@ApiTags('admin')
@ApiBearerAuth()
@Controller('admin/goods')
export class WaitingRoomAdminController {
  constructor(private readonly control: QueueControlService) {}

  @Post(':goodsId/queue/pause')
  @HttpCode(200)
  @AdminOnly()
  @ApiOperation({
    summary:
      "Pause a queue sale's admissions (joining, standings and the admitted's purchases go on)",
  })
  @ApiOkResponse({ type: QueueAdmissionDto })
  @ApiErrors(...QUEUE_ADMIN_ERRORS)
  pause(@Param('goodsId', PositiveIntPipe) goodsId: number) {
    return this.control.set(goodsId, { paused: true });
  }

  @Post(':goodsId/queue/resume')
  @HttpCode(200)
  @AdminOnly()
  @ApiOperation({ summary: "Resume a queue sale's admissions" })
  @ApiOkResponse({ type: QueueAdmissionDto })
  @ApiErrors(...QUEUE_ADMIN_ERRORS)
  resume(@Param('goodsId', PositiveIntPipe) goodsId: number) {
    return this.control.set(goodsId, { paused: false });
  }

  @Patch(':goodsId/queue')
  @AdminOnly()
  @ApiOperation({ summary: "Pace a queue sale's admissions anew (admitPerSecond)" })
  @ApiOkResponse({ type: QueueAdmissionDto })
  @ApiErrors(...QUEUE_ADMIN_ERRORS, 'PAYLOAD_TOO_LARGE')
  pace(
    @Param('goodsId', PositiveIntPipe) goodsId: number,
    @Body(strictValidation) body: QueuePaceDto,
  ) {
    return this.control.set(goodsId, { admitPerSecond: body.admitPerSecond });
  }
}

import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
} from '@nestjs/swagger';
import { DomainError } from '../../common/errors/domain-error.js';
import { strictValidation } from '../../common/pipes/validation.pipe.js';
import { AdminOnly } from '../auth/auth.decorators.js';
import { BLOCK_TYPES, BlockEntryDto, CreateBlockDto } from './blocklist.dto.js';
import { BlocklistService, type BlockEntry, type BlockType } from './blocklist.service.js';

@ApiTags('admin')
@ApiBearerAuth()
@Controller('admin/blocklist')
export class BlocklistController {
  constructor(private readonly blocklist: BlocklistService) {}

  @Post()
  @HttpCode(201)
  @AdminOnly()
  @ApiOperation({
    summary: 'Block a user or a client address (admin)',
    description:
      'A blocked user or address gets 403 FORBIDDEN on the purchase, token and challenge routes before anything else happens; every instance applies it within a moment. Without ttlSeconds it stays until deleted.',
  })
  @ApiCreatedResponse({ type: BlockEntryDto })
  add(@Body(strictValidation) body: CreateBlockDto): Promise<BlockEntry> {
    return this.blocklist.add(body);
  }

  @Get()
  @AdminOnly()
  @ApiOperation({ summary: 'The blocklist: every entry not expired yet (admin)' })
  @ApiOkResponse({ type: [BlockEntryDto] })
  list(): Promise<BlockEntry[]> {
    return this.blocklist.list();
  }

  @Delete(':type/:value')
  @HttpCode(204)
  @AdminOnly()
  @ApiOperation({ summary: 'Unblock (admin); an unknown entry is fine' })
  @ApiNoContentResponse()
  async remove(@Param('type') type: string, @Param('value') value: string): Promise<void> {
    if (!BLOCK_TYPES.includes(type as BlockType)) {
      throw new DomainError('VALIDATION_FAILED', 'type must be ip or user');
    }
    await this.blocklist.remove(type as BlockType, value);
  }
}

import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Res } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiCreatedResponse,
  ApiNoContentResponse,
  ApiOkResponse,
  ApiOperation,
  ApiQuery,
  ApiTags,
} from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { DomainError } from '../../common/errors/domain-error.js';
import { strictValidation } from '../../common/pipes/validation.pipe.js';
import { AdminOnly } from '../auth/auth.decorators.js';
import { BLOCK_TYPES, BlockEntryDto, CreateBlockDto } from './blocklist.dto.js';
import {
  BlocklistService,
  LIST_PAGE,
  type BlockEntry,
  type BlockType,
} from './blocklist.service.js';
import { ADMIN, ApiErrors } from '../../common/errors/api-errors.decorator.js';

/** The longest cursor a page gives (an IPv6 /64 entry's), with room to spare. */
const MAX_CURSOR_LENGTH = 200;
const PAGE_LIMIT = /^[1-9][0-9]{0,3}$/;

/** The page size asked for: 1..LIST_PAGE.max, or 400 VALIDATION_FAILED. */
function pageLimit(limit: unknown): number {
  if (limit === undefined) return LIST_PAGE.default;
  if (typeof limit === 'string' && PAGE_LIMIT.test(limit) && Number(limit) <= LIST_PAGE.max) {
    return Number(limit);
  }
  throw new DomainError('VALIDATION_FAILED', `limit must be an integer from 1 to ${LIST_PAGE.max}`);
}

function pageCursor(cursor: unknown): string | undefined {
  if (cursor === undefined) return undefined;
  if (typeof cursor === 'string' && cursor.length > 0 && cursor.length <= MAX_CURSOR_LENGTH) {
    return cursor;
  }
  throw new DomainError('VALIDATION_FAILED', 'cursor is not one this list gave');
}

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
      'A blocked user or address gets 403 FORBIDDEN on the purchase, token and challenge routes before anything else happens; every instance applies it within a moment. Without ttlSeconds it stays until deleted. An address a trusted proxy may have (TRUSTED_PROXIES, or an IPv6 /64 overlapping one) is refused with 400 VALIDATION_FAILED: every buyer behind the proxy would be blocked with it.',
  })
  @ApiCreatedResponse({ type: BlockEntryDto })
  @ApiErrors(...ADMIN, 'VALIDATION_FAILED', 'PAYLOAD_TOO_LARGE')
  add(@Body(strictValidation) body: CreateBlockDto): Promise<BlockEntry> {
    return this.blocklist.add(body);
  }

  @Get()
  @AdminOnly()
  @ApiOperation({
    summary: 'The blocklist, a page at a time: the entries not expired yet (admin)',
    description: `Oldest expiry first (entries without one last), then by type and value. A page holds \`limit\` entries (default ${LIST_PAGE.default}, at most ${LIST_PAGE.max}); when more follow, the \`X-Next-Cursor\` header carries the \`cursor\` of the next page (no header: the last page). Read from the answering instance's copy, which has another instance's change within a moment.`,
  })
  @ApiQuery({ name: 'limit', required: false, type: Number, minimum: 1, maximum: LIST_PAGE.max })
  @ApiQuery({ name: 'cursor', required: false, type: String })
  @ApiOkResponse({
    type: [BlockEntryDto],
    headers: {
      'X-Next-Cursor': { description: 'The cursor of the next page; absent on the last' },
    },
  })
  @ApiErrors(...ADMIN, 'VALIDATION_FAILED')
  async list(
    @Query('limit') limit: unknown,
    @Query('cursor') cursor: unknown,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<BlockEntry[]> {
    const page = await this.blocklist.list(pageLimit(limit), pageCursor(cursor));
    if (page.next !== null) void reply.header('X-Next-Cursor', page.next);
    return page.entries;
  }

  @Delete(':type/:value')
  @HttpCode(204)
  @AdminOnly()
  @ApiOperation({ summary: 'Unblock (admin); an unknown entry is fine' })
  @ApiNoContentResponse()
  @ApiErrors(...ADMIN, 'VALIDATION_FAILED')
  async remove(@Param('type') type: string, @Param('value') value: string): Promise<void> {
    if (!BLOCK_TYPES.includes(type as BlockType)) {
      throw new DomainError('VALIDATION_FAILED', 'type must be ip or user');
    }
    await this.blocklist.remove(type as BlockType, value);
  }
}

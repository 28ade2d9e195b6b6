import { Controller, Get, Param, StreamableFile } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiOkResponse,
  ApiOperation,
  ApiProduces,
  ApiProperty,
  ApiPropertyOptional,
  ApiTags,
} from '@nestjs/swagger';
import { ADMIN, ApiErrors } from '../../common/errors/api-errors.decorator.js';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { AdminOnly, Public } from '../auth/auth.decorators.js';
import { RateLimit } from '../rate-limit/rate-limit.policy.js';
import { DRAW_RULE, FairnessService, type FairnessView } from './fairness.service.js';

class DrawRuleDto {
  @ApiProperty({ example: DRAW_RULE.commitment }) commitment: string;
  @ApiProperty({ example: DRAW_RULE.digest }) digest: string;
  @ApiProperty({ example: DRAW_RULE.seed }) seed: string;
  @ApiProperty({ example: DRAW_RULE.order }) order: string;
  @ApiProperty({ example: DRAW_RULE.verify }) verify: string;
}

class FairnessDto {
  @ApiProperty() goodsId: number;
  @ApiProperty({
    description:
      'The hex SHA-256 of the secret’s bytes: the same from queueOpensAt on, published before any join',
  })
  seedCommitment: string;
  @ApiProperty({
    description:
      'The order is drawn (at startAt; a draw sale at entriesCloseAt): the values below are revealed',
  })
  drawn: boolean;
  @ApiPropertyOptional({ description: 'After the draw: the secret (hex of its 32 bytes)' })
  secret?: string;
  @ApiPropertyOptional({
    type: String,
    nullable: true,
    description: 'After the draw: the digest of the pre-queue the secret was combined with',
  })
  digest?: string | null;
  @ApiPropertyOptional({
    description: 'After the draw: the join indices the draw orders (0..preSize-1)',
  })
  preSize?: number;
  @ApiPropertyOptional({ description: 'After the draw: the seed the order follows from' })
  seed?: string;
  @ApiProperty({ type: DrawRuleDto }) rule: DrawRuleDto;
}

/**
 * A queue sale's commit-and-reveal (FairnessService): the public answer anybody checks the draw
 * against, and the operator's export of the joins an auditor recomputes the order from.
 */
@ApiTags('goods')
@Controller()
export class FairnessController {
  constructor(private readonly fairness: FairnessService) {}

  @Get('goods/:goodsId/fairness')
  @Public()
  @RateLimit('read')
  @ApiOperation({
    summary: 'How a queue or draw sale’s order is drawn, and from what (commit, then reveal)',
    description:
      'A queue or draw sale. From queueOpensAt (a draw sale: entriesOpenAt): `seedCommitment`, the hex SHA-256 of a secret drawn before the first join (entry). At startAt (a draw sale: entriesCloseAt) the order is drawn from a seed that combines that secret with the digest of the pre-queue as it stood then, so that neither the operator (committed before seeing any join) nor the joiners (not knowing the secret) could steer it. After the draw the secret, the digest, the pre-queue size and the seed are revealed, with the rule that gives the order: each buyer can check its place from the receipt its join answered, and `npm run verify-draw` checks the whole order against the operator’s export. In a draw sale the order ranks the entries: the first places get the purchase rights, the next the waitlist. 409 QUEUE_NOT_OPEN for a sale with neither a waiting room nor a draw, or before it opens.',
  })
  @ApiOkResponse({ type: FairnessDto })
  @ApiErrors(
    'VALIDATION_FAILED',
    'GOODS_NOT_FOUND',
    'QUEUE_NOT_OPEN',
    'TOO_MANY_REQUESTS',
    'UNAVAILABLE',
  )
  view(@Param('goodsId', PositiveIntPipe) goodsId: number): Promise<FairnessView> {
    return this.fairness.view(goodsId);
  }

  @Get('admin/goods/:goodsId/entries')
  @AdminOnly()
  @ApiBearerAuth()
  @ApiTags('admin')
  @ApiOperation({
    summary: 'The export an auditor recomputes a queue or draw sale’s order from (admin)',
    description:
      'JSON, streamed: the fairness answer (with the secret once drawn), then `preQueue`: every join before the draw (a draw sale: every entry) as `{joinIndex, pseudonym, place}`, and `after`: every later join as `{arrival, pseudonym, place}`. `pseudonym` is the user id encrypted (AES-256, 32 hex digits) under a key of the sale that is never revealed (the same as the buyer’s join receipt); `place` is the place in the order its admission (a draw sale: its purchase right) was given at (0-based), null while not given one. `npm run verify-draw -- --goods ID --base-url URL --export FILE` checks it against the public fairness answer.',
  })
  @ApiProduces('application/json')
  @ApiOkResponse({ description: 'The export (JSON)' })
  @ApiErrors(...ADMIN, 'VALIDATION_FAILED', 'GOODS_NOT_FOUND', 'QUEUE_NOT_OPEN')
  async entries(@Param('goodsId', PositiveIntPipe) goodsId: number): Promise<StreamableFile> {
    return new StreamableFile(await this.fairness.export(goodsId), {
      type: 'application/json; charset=utf-8',
    });
  }
}

import { Controller, Get, Param, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { ApiErrors } from '../../common/errors/api-errors.decorator.js';
import { sendPage } from '../../common/http/page-files.js';
import { PositiveIntPipe } from '../../common/pipes/positive-int.pipe.js';
import { Public } from '../auth/auth.decorators.js';
import { RateLimit } from '../rate-limit/rate-limit.policy.js';
import { BuyerPageService } from './buyer-page.service.js';

/** Outside /api/v1 (bootstrap excludes it from the prefix): the address a sale is announced with. */
export const BUYER_PAGE_PATH = 'sale/:goodsId';

@ApiTags('pages')
@Controller()
export class BuyerPageController {
  constructor(private readonly page: BuyerPageService) {}

  @Get(BUYER_PAGE_PATH)
  @Public()
  @RateLimit('read')
  @ApiOperation({
    summary: "The buyer's page for one sale (HTML; served at /sale/{goodsId}, outside /api/v1)",
    description:
      'The goods, a countdown to the start, the waiting room (join, place, ETA) of a queue sale, the ' +
      'challenge solved in the browser when SECKILL_REQUIRE_CHALLENGE=true, the buy button and the ' +
      "result pushed live. The page asks for the buyer's token (a field, or #token=<JWT> in the address) " +
      'and sends it only in the Authorization header. Whether the goods exists, the page learns from ' +
      'GET /api/v1/goods/{goodsId}.',
  })
  @ApiProduces('text/html')
  @ApiOkResponse({ description: 'text/html' })
  @ApiErrors('VALIDATION_FAILED', 'TOO_MANY_REQUESTS')
  show(@Param('goodsId', PositiveIntPipe) _goodsId: number, @Res() reply: FastifyReply): void {
    sendPage(reply, this.page.html);
  }
}

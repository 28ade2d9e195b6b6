import { Controller, Get, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AdminOnly, CurrentUser, type AuthUser } from '../auth/auth.decorators.js';
import {
  DashboardFeedService,
  FEED_LIFETIME_MS,
  MAX_FEEDS,
  MAX_FEEDS_PER_ADMIN,
  STALLED_FEED_MS,
} from './dashboard-feed.service.js';
import { ADMIN, ApiErrors } from '../../common/errors/api-errors.decorator.js';

@ApiTags('admin')
@ApiBearerAuth()
@Controller('admin')
export class DashboardController {
  constructor(private readonly feed: DashboardFeedService) {}

  @Get('events')
  @AdminOnly()
  @ApiOperation({
    summary: 'Live feed of every open or recent sale (Server-Sent Events), about once a second',
    description:
      'Each event is `data: <snapshot JSON>`: per sale its remaining and sold units, orders by status, ' +
      'units in flight, the last confirmed reconcile verdict and purchase answers per second by outcome ' +
      '(summed over every instance); and the queues. `event: unavailable` when MySQL could not be read. ' +
      `Comment lines are heartbeats. At most ${MAX_FEEDS} feeds per instance and ${MAX_FEEDS_PER_ADMIN} per admin ` +
      `(then 429). A feed ends after ${FEED_LIFETIME_MS / 60_000} min (reconnect), and one whose client has ` +
      `read nothing for ${STALLED_FEED_MS / 1000} s while its socket is full is cut.`,
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({ description: 'text/event-stream' })
  @ApiErrors(...ADMIN, 'TOO_MANY_REQUESTS')
  events(@Res() reply: FastifyReply, @CurrentUser() user: AuthUser): void {
    this.feed.attach(reply, user.userId);
  }
}

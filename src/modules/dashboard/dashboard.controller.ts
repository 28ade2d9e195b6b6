import { Controller, Get, Res } from '@nestjs/common';
import { ApiBearerAuth, ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AdminOnly } from '../auth/auth.decorators.js';
import { DashboardFeed, MAX_FEEDS } from './dashboard-feed.service.js';

@ApiTags('admin')
@ApiBearerAuth()
@Controller('admin')
export class DashboardController {
  constructor(private readonly feed: DashboardFeed) {}

  @Get('events')
  @AdminOnly()
  @ApiOperation({
    summary: 'Live feed of every open or recent sale (Server-Sent Events), about once a second',
    description:
      'Each event is `data: <snapshot JSON>`: per sale its remaining and sold units, orders by status, ' +
      'units in flight, the last confirmed reconcile verdict and purchase answers per second by outcome ' +
      '(summed over every instance); and the queues. `event: unavailable` when MySQL could not be read. ' +
      `Comment lines are heartbeats. At most ${MAX_FEEDS} feeds per instance (then 429).`,
  })
  @ApiProduces('text/event-stream')
  @ApiOkResponse({ description: 'text/event-stream' })
  events(@Res() reply: FastifyReply): void {
    this.feed.attach(reply);
  }
}

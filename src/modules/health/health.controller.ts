import { Controller, Get } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { RabbitConnection } from '../../infra/rabbitmq/rabbitmq.connection.js';
import { Public } from '../auth/auth.decorators.js';
import { OrderPublisher } from '../messaging/order-publisher.service.js';
import { StockService } from '../stock/stock.service.js';

const CHECK_TIMEOUT_MS = 2_000;

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly stock: StockService,
    private readonly rabbit: RabbitConnection,
    private readonly publisher: OrderPublisher,
  ) {}

  @Get('live')
  @Public()
  @ApiOperation({ summary: 'The process is up' })
  live() {
    return { status: 'ok' };
  }

  @Get('ready')
  @Public()
  @HealthCheck()
  @ApiOperation({ summary: '200 when MySQL, Redis and RabbitMQ are all reachable, else 503' })
  ready() {
    return this.health.check([
      () => this.database.pingCheck('mysql', { timeout: CHECK_TIMEOUT_MS }),
      () =>
        this.indicators
          .check('redis')
          .attempt(() => this.stock.ping())
          .withTimeout(CHECK_TIMEOUT_MS),
      () => {
        const rabbitmq = this.indicators.check('rabbitmq');
        // Each connection this instance uses: a worker's consumers have one of their own.
        const down = this.rabbit.disconnected();
        if (down.length > 0) return rabbitmq.down(`not connected: ${down.join(', ')}`);
        // Connected is not enough: a stalled broker holds confirms, and purchases would 503.
        return rabbitmq
          .attempt(() => this.publisher.probeConfirms(CHECK_TIMEOUT_MS))
          .withTimeout(CHECK_TIMEOUT_MS);
      },
    ]);
  }
}

import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  HealthIndicatorService,
  TypeOrmHealthIndicator,
  type HealthCheckResult,
} from '@nestjs/terminus';
import { UnavailableError } from '../../common/errors/domain-error.js';
import { RabbitMqConnection } from '../../infra/rabbitmq/rabbitmq.connection.js';
import { RedisHealthService } from '../../infra/redis/redis-health.service.js';
import { Public } from '../auth/auth.decorators.js';
import { OrderPublisher } from '../messaging/order.publisher.js';

const CHECK_TIMEOUT_MS = 2_000;

/** Marks the broker's report when no connection is up (else it is the confirm probe that failed). */
const NOT_CONNECTED = 'not-connected';

/**
 * What a 503 says of each dependency that failed its check, in our words: the checks' own
 * reports carry the drivers' error texts (hosts, ports, internals), which stay in no answer.
 */
function downPhrase(name: string, report: Record<string, unknown> | undefined): string {
  switch (name) {
    case 'mysql':
      return 'MySQL is unreachable';
    case 'redis':
      return 'Redis is unreachable';
    case 'rabbitmq':
      return report?.reason === NOT_CONNECTED
        ? 'RabbitMQ is unreachable'
        : 'RabbitMQ does not confirm publishes';
    default:
      return `${name} is unreachable`;
  }
}

@ApiTags('health')
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly redis: RedisHealthService,
    private readonly rabbit: RabbitMqConnection,
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
  @ApiServiceUnavailableResponse({
    description:
      '`{statusCode: 503, code: "UNAVAILABLE", message}`, the message naming each dependency down, e.g. "Not ready: Redis is unreachable"',
  })
  async ready(): Promise<HealthCheckResult> {
    try {
      return await this.health.check([
        () => this.database.pingCheck('mysql', { timeout: CHECK_TIMEOUT_MS }),
        () =>
          this.indicators
            .check('redis')
            .attempt(() => this.redis.ping())
            .withTimeout(CHECK_TIMEOUT_MS),
        () => {
          const rabbitmq = this.indicators.check('rabbitmq');
          // Each connection this instance uses: a worker's consumers have one of their own.
          if (this.rabbit.disconnected().length > 0)
            return rabbitmq.down({ reason: NOT_CONNECTED });
          // Connected is not enough: a stalled broker holds confirms, and purchases would 503.
          return rabbitmq
            .attempt(() => this.publisher.probeConfirms(CHECK_TIMEOUT_MS))
            .withTimeout(CHECK_TIMEOUT_MS);
        },
      ]);
    } catch (error) {
      if (!(error instanceof ServiceUnavailableException)) throw error;
      const report = error.getResponse() as HealthCheckResult;
      if (report.status === 'shutting_down') throw new UnavailableError('Not ready: shutting down');
      const phrases = Object.entries(report.error ?? {}).map(([name, failed]) =>
        downPhrase(name, failed),
      );
      throw new UnavailableError(`Not ready: ${phrases.join('; ')}`);
    }
  }
}

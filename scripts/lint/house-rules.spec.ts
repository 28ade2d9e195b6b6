import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import { describe, it } from 'vitest';
import house from './house-rules.js';

RuleTester.describe = describe;
RuleTester.it = it;

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser } });
const rule = house.rules!['class-matches-file'];

describe('house/class-matches-file', () => {
  tester.run('class-matches-file', rule, {
    valid: [
      {
        filename: 'src/modules/seckill/redis-purchase.service.ts',
        code: '@Injectable() export class RedisPurchaseService {}',
      },
      {
        filename: 'src/infra/rabbitmq/rabbitmq.connection.ts',
        code: 'export class RabbitMqConnection {}',
      },
      {
        filename: 'src/modules/orders/order-writer.service.ts',
        code: 'class VersionConflict extends Error {} export class OrderWriterService {}',
      },
      {
        filename: 'src/modules/goods/goods.dto.ts',
        code: 'export class CreateGoodsDto {} export class GoodsViewDto {}',
      },
      { filename: 'src/common/batching/batcher.ts', code: 'export class Batcher {}' },
      { filename: 'src/modules/auth/auth.decorators.ts', code: 'export const Public = () => 1;' },
    ],
    invalid: [
      {
        filename: 'src/modules/seckill/redis-purchase.service.ts',
        code: '@Injectable() export class RedisPurchase {}',
        errors: [{ messageId: 'suffix' }],
      },
      {
        filename: 'src/modules/seckill/redis-purchase.service.ts',
        code: '@Injectable() export class DatabasePurchaseService {}',
        errors: [{ messageId: 'name' }],
      },
      {
        filename: 'src/modules/sale-store/sold-out-memo.ts',
        code: '@Injectable() export class SoldOutMemo {}',
        errors: [{ messageId: 'needsRole' }],
      },
      {
        filename: 'src/modules/sale-store/sale-reads.helper.ts',
        code: 'export class SaleReadsHelper {}',
        errors: [{ messageId: 'unknownRole' }],
      },
      {
        filename: 'src/modules/orders/order.types.ts',
        code: 'export class OrderView {}',
        errors: [{ messageId: 'plainRole' }],
      },
      {
        filename: 'src/config/env-readers.ts',
        code: 'export class ConfigValidationError extends Error {}',
        errors: [{ messageId: 'name' }],
      },
    ],
  });
});

import { ApiPropertyOptional } from '@nestjs/swagger';

/** The purchase body as Swagger shows it (PurchaseBodyPipe checks it by hand). */
export class PurchaseBodyDto {
  @ApiPropertyOptional({ minimum: 1, default: 1, description: 'At most the sale’s perUserLimit' })
  quantity?: number;
}

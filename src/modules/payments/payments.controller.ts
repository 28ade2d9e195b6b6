import { Body, Controller, Headers, HttpCode, Post } from '@nestjs/common';
import {
  ApiBody,
  ApiHeader,
  ApiOkResponse,
  ApiOperation,
  ApiProperty,
  ApiTags,
} from '@nestjs/swagger';
import { ApiErrors } from '../../common/errors/api-errors.decorator.js';
import { BodyLimit, RawJsonBody } from '../../common/http/route-config.js';
import { SIGNATURE_HEADER } from '../../common/webhook-signature.js';
import { ORDER_STATUSES } from '../../infra/database/entities/order.entity.js';
import { Public } from '../auth/auth.decorators.js';
import { PAYMENT_EVENT_TYPES } from './payment-event.js';
import { PaymentsService } from './payments.service.js';

class PaymentEventDataDto {
  @ApiProperty({ example: 'SK1764400000000A1B2C3D4' }) orderNo: string;
  @ApiProperty({ description: "Minor units: the order's price × quantity × 100", example: 19900 })
  amount: number;
  @ApiProperty({ description: "ISO 4217, the shop's (SHOP_CURRENCY)", example: 'CNY' })
  currency: string;
}

class PaymentEventDto {
  @ApiProperty({ description: "The provider's event id: a second delivery is answered the same" })
  id: string;
  @ApiProperty({ enum: PAYMENT_EVENT_TYPES }) type: string;
  @ApiProperty({ type: PaymentEventDataDto }) data: PaymentEventDataDto;
}

class WebhookAnswerDto {
  @ApiProperty() eventId: string;
  @ApiProperty() orderNo: string;
  @ApiProperty({ enum: ORDER_STATUSES, description: 'The order status the event left' })
  status: string;
}

/** Events are a few hundred bytes; nothing legitimate comes near this. */
const WEBHOOK_BODY_LIMIT = 64 * 1024;

@ApiTags('payments')
@Controller('payments')
export class PaymentsController {
  constructor(private readonly payments: PaymentsService) {}

  @Post('webhook')
  @Public()
  @HttpCode(200)
  @RawJsonBody()
  @BodyLimit(WEBHOOK_BODY_LIMIT)
  @ApiOperation({
    summary: "The payment provider's events (signed; no bearer token)",
    description:
      'payment.started extends the deadline once (PAYMENT_GRACE_SECONDS); payment.succeeded pays the order, or, after its cancel, takes a unit again if one is left, else leaves it REFUND_REQUIRED; payment.failed changes nothing. See docs/payments.md.',
  })
  @ApiHeader({
    name: 'Seckill-Signature',
    required: true,
    description:
      't=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> with PAYMENT_WEBHOOK_SECRET; several v1 may be given',
  })
  @ApiBody({ type: PaymentEventDto })
  @ApiOkResponse({ type: WebhookAnswerDto })
  @ApiErrors(
    'VALIDATION_FAILED',
    'BAD_SIGNATURE',
    'ORDER_NOT_FOUND',
    'PAYMENT_MISMATCH',
    'PAYLOAD_TOO_LARGE',
    'UNAVAILABLE',
  )
  webhook(@Body() body: unknown, @Headers(SIGNATURE_HEADER) signature: string | undefined) {
    // An empty body reaches here as the empty string; anything but text was not JSON.
    return this.payments.receive(typeof body === 'string' ? body : '', signature);
  }
}

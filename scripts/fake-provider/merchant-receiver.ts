import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifySignature } from '../../src/common/webhook-signature.js';

/** An order event as the merchant receives it (the contract's body). */
export interface ReceivedEvent {
  id: string;
  type: string;
  createdAt: string;
  data: { orderNo: string; goodsId: number; userId: number; quantity: number; status: string };
}

/** What the receiver answers a delivery: a status, or no answer at all until it is closed. */
export type Answer = number | 'hang';

/**
 * The merchant's side of the order events, for the demo and the tests: an HTTP server on a port
 * the OS picks that checks each delivery's signature (as a shop would, refusing a bad one with
 * 401), answers as it is told (`answer`: 200 by default, a failure status, or no answer), and
 * keeps every event it accepted, de-duplicated by id as a shop must (delivery is at least once).
 */
export class MerchantReceiver {
  /** Every accepted delivery, repeats included, in arrival order. */
  readonly deliveries: ReceivedEvent[] = [];
  /** Deliveries refused for their signature. */
  badSignatures = 0;
  /** Deliveries answered with a failure (or not at all). */
  failedAnswers = 0;
  /** Decides the answer to each delivery that is correctly signed. */
  answer: (event: ReceivedEvent) => Answer = () => 200;
  private readonly hanging = new Set<ServerResponse>();

  private constructor(
    private readonly server: Server,
    private readonly secret: string,
  ) {}

  static async start(secret: string): Promise<MerchantReceiver> {
    const server = createServer();
    const receiver = new MerchantReceiver(server, secret);
    server.on('request', (request, response) => void receiver.handle(request, response));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return receiver;
  }

  get url(): string {
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/hooks/seckill`;
  }

  /** Each event once, by id, in the order of its first arrival. */
  get events(): ReceivedEvent[] {
    const seen = new Map<string, ReceivedEvent>();
    for (const event of this.deliveries) if (!seen.has(event.id)) seen.set(event.id, event);
    return [...seen.values()];
  }

  /** The types of one order's events, in arrival order, without repeats. */
  typesOf(orderNo: string): string[] {
    return this.events.filter((event) => event.data.orderNo === orderNo).map((e) => e.type);
  }

  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString();
    const signature = request.headers['seckill-signature'];
    if (
      verifySignature(
        typeof signature === 'string' ? signature : undefined,
        body,
        [this.secret],
        300,
      ) !== 'valid'
    ) {
      this.badSignatures++;
      response.writeHead(401).end();
      return;
    }
    const event = JSON.parse(body) as ReceivedEvent;
    const answer = this.answer(event);
    if (answer === 'hang') {
      this.failedAnswers++;
      this.hanging.add(response);
      return;
    }
    if (answer >= 200 && answer < 300) this.deliveries.push(event);
    else this.failedAnswers++;
    response.writeHead(answer).end();
  }

  async close(): Promise<void> {
    for (const response of this.hanging) response.destroy();
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close').catch(() => undefined);
  }
}

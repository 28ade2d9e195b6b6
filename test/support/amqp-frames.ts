import type { Socket } from 'node:net';

/** What the broker sent that tells a double ack apart: channel closes and (re)deliveries. */
export interface BrokerChannelClose {
  channel: number;
  code: number;
  text: string;
}

export interface BrokerDelivery {
  channel: number;
  redelivered: boolean;
  body: string;
}

const FRAME_METHOD = 1;
const FRAME_HEADER = 2;
const FRAME_BODY = 3;
const CHANNEL_CLOSE = (20 << 16) | 40;
const BASIC_DELIVER = (60 << 16) | 60;

interface Stream {
  pending: Buffer;
  /** Per channel, the delivery whose content frames are still coming. */
  open: Map<number, { redelivered: boolean; size: number; chunks: Buffer[] }>;
}

/**
 * Reads the broker's side of AMQP 0-9-1 connections (as a TcpProxy passes it on) without
 * taking part: only the frames a test asserts on are decoded, the rest is skipped by length.
 */
export class AmqpFrameWatcher {
  readonly channelCloses: BrokerChannelClose[] = [];
  readonly deliveries: BrokerDelivery[] = [];
  private readonly streams = new WeakMap<Socket, Stream>();

  feed(chunk: Buffer, connection: Socket): void {
    let stream = this.streams.get(connection);
    if (!stream) {
      stream = { pending: Buffer.alloc(0), open: new Map() };
      this.streams.set(connection, stream);
    }
    let buffer = Buffer.concat([stream.pending, chunk]);
    while (buffer.length >= 7) {
      const size = buffer.readUInt32BE(3);
      if (buffer.length < 7 + size + 1) break;
      this.frame(stream, buffer.readUInt8(0), buffer.readUInt16BE(1), buffer.subarray(7, 7 + size));
      buffer = buffer.subarray(7 + size + 1);
    }
    stream.pending = Buffer.from(buffer);
  }

  private frame(stream: Stream, type: number, channel: number, payload: Buffer): void {
    if (type === FRAME_METHOD) {
      const method = payload.readUInt32BE(0);
      if (method === CHANNEL_CLOSE) {
        const textLength = payload.readUInt8(6);
        this.channelCloses.push({
          channel,
          code: payload.readUInt16BE(4),
          text: payload.subarray(7, 7 + textLength).toString(),
        });
      } else if (method === BASIC_DELIVER) {
        // consumer-tag (shortstr), delivery-tag (8 bytes), then the redelivered bit.
        const afterTag = 4 + 1 + payload.readUInt8(4) + 8;
        stream.open.set(channel, {
          redelivered: payload.readUInt8(afterTag) === 1,
          size: -1,
          chunks: [],
        });
      }
    } else if (type === FRAME_HEADER) {
      const delivery = stream.open.get(channel);
      if (delivery) delivery.size = Number(payload.readBigUInt64BE(4));
      if (delivery?.size === 0) this.complete(stream, channel);
    } else if (type === FRAME_BODY) {
      const delivery = stream.open.get(channel);
      if (!delivery) return;
      delivery.chunks.push(Buffer.from(payload));
      if (Buffer.concat(delivery.chunks).length >= delivery.size) this.complete(stream, channel);
    }
  }

  private complete(stream: Stream, channel: number): void {
    const delivery = stream.open.get(channel)!;
    stream.open.delete(channel);
    this.deliveries.push({
      channel,
      redelivered: delivery.redelivered,
      body: Buffer.concat(delivery.chunks).toString(),
    });
  }
}

// Breaks one consumer channel of an app instance from its RabbitMQ proxy, the way a double ack
// does: an ack with a delivery tag the broker never gave, on a channel that consumes. The broker
// closes that channel (406 PRECONDITION_FAILED) and the connection stays up, so the app re-opens
// the channel on it (what a connection close does not exercise).
import type { Socket } from 'node:net';

import type { TcpProxy } from '../../test/support/tcp-proxy.js';

const PROTOCOL_HEADER = 8;
const FRAME_METHOD = 1;
const FRAME_END = 0xce;
const method = (classId: number, methodId: number) => (classId << 16) | methodId;
const BASIC_CONSUME = method(60, 20);
const CHANNEL_CLOSE = method(20, 40);
const CHANNEL_CLOSE_OK = method(20, 41);

interface ClientStream {
  upstream: Socket;
  /** Bytes of a frame not complete yet: nothing of ours may go out before it ends. */
  pending: Buffer;
  headerLeft: number;
  consuming: Set<number>;
}

/** basic.ack(delivery-tag, multiple = false) on `channel`, as one frame. */
export function bogusAckFrame(channel: number, deliveryTag: bigint): Buffer {
  const frame = Buffer.alloc(7 + 13 + 1);
  frame.writeUInt8(FRAME_METHOD, 0);
  frame.writeUInt16BE(channel, 1);
  frame.writeUInt32BE(13, 3);
  frame.writeUInt16BE(60, 7);
  frame.writeUInt16BE(80, 9);
  frame.writeBigUInt64BE(deliveryTag, 11);
  frame.writeUInt8(0, 19);
  frame.writeUInt8(FRAME_END, 20);
  return frame;
}

export class ChannelBreaker {
  private readonly streams = new Map<Socket, ClientStream>();

  /** Follows what the app sends through `proxy`: the frames' ends and which channels consume. */
  constructor(private readonly proxy: TcpProxy) {
    proxy.tapClient((chunk, _client, upstream) => this.feed(chunk, upstream));
  }

  private feed(chunk: Buffer, upstream: Socket): void {
    let stream = this.streams.get(upstream);
    if (!stream) {
      stream = {
        upstream,
        pending: Buffer.alloc(0),
        headerLeft: PROTOCOL_HEADER,
        consuming: new Set(),
      };
      this.streams.set(upstream, stream);
      upstream.once('close', () => this.streams.delete(upstream));
    }
    let buffer = Buffer.concat([stream.pending, chunk]);
    const skip = Math.min(stream.headerLeft, buffer.length);
    stream.headerLeft -= skip;
    buffer = buffer.subarray(skip);
    while (buffer.length >= 7) {
      const size = buffer.readUInt32BE(3);
      if (buffer.length < 7 + size + 1) break;
      if (buffer.readUInt8(0) === FRAME_METHOD && size >= 4) {
        this.method(stream, buffer.readUInt16BE(1), buffer.readUInt32BE(7));
      }
      buffer = buffer.subarray(7 + size + 1);
    }
    stream.pending = Buffer.from(buffer);
  }

  private method(stream: ClientStream, channel: number, id: number): void {
    if (id === BASIC_CONSUME) stream.consuming.add(channel);
    else if (id === CHANNEL_CLOSE || id === CHANNEL_CLOSE_OK) stream.consuming.delete(channel);
  }

  /**
   * Sends the bogus ack on one consuming channel (`pick` chooses among them), between two of the
   * app's frames. False when no connection through the proxy consumes, or every consuming
   * connection is in the middle of a frame (the caller may try again).
   */
  break(pick: (count: number) => number): boolean {
    const candidates = [...this.streams.values()].flatMap((stream) =>
      stream.headerLeft === 0 && stream.pending.length === 0
        ? [...stream.consuming].map((channel) => ({ stream, channel }))
        : [],
    );
    if (candidates.length === 0) return false;
    const { stream, channel } = candidates[pick(candidates.length)];
    // The broker never gave a tag this high: it closes the channel with 406.
    this.proxy.sendToServer(stream.upstream, bogusAckFrame(channel, 2n ** 62n));
    stream.consuming.delete(channel);
    return true;
  }
}

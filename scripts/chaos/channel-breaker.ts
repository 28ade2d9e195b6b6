// Breaks one consumer channel of an app instance from its RabbitMQ proxy, the way a double ack
// does: an ack with a delivery tag the broker never gave, on a channel that consumes. The broker
// closes that channel (406 PRECONDITION_FAILED) and the connection stays up, so the app re-opens
// the channel on it (what a connection close does not exercise). It also reads what the broker
// sends back: a channel the broker closes for any other reason is the app's own doing (a
// delivery settled twice is such a 406), which the checker reports.
import type { Socket } from 'node:net';

import type { TcpProxy } from '../../test/support/tcp-proxy.js';

const PROTOCOL_HEADER = 8;
const FRAME_METHOD = 1;
const FRAME_END = 0xce;
const method = (classId: number, methodId: number) => (classId << 16) | methodId;
const BASIC_CONSUME = method(60, 20);
const CHANNEL_CLOSE = method(20, 40);
const CHANNEL_CLOSE_OK = method(20, 41);
/** The delivery tag of the run's own bogus ack: the broker never gives one this high. */
const BOGUS_TAG = 2n ** 62n;

/** A channel the broker closed, as its channel.close says why. */
export interface BrokerClose {
  channel: number;
  code: number;
  text: string;
}

/** The arguments of a channel.close: reply-code (short), then reply-text (shortstr). */
export function parseChannelClose(args: Buffer): { code: number; text: string } {
  const code = args.length >= 2 ? args.readUInt16BE(0) : 0;
  const length = args.length >= 3 ? args.readUInt8(2) : 0;
  return { code, text: args.subarray(3, 3 + length).toString('utf8') };
}

/** One direction of an AMQP connection, read frame by frame (a frame may span chunks). */
class FrameReader {
  private pending = Buffer.alloc(0);

  constructor(
    private headerLeft: number,
    private readonly onMethod: (channel: number, id: number, args: Buffer) => void,
  ) {}

  /** Between two frames: bytes of the proxy's own may go out now without corrupting the stream. */
  get between(): boolean {
    return this.headerLeft === 0 && this.pending.length === 0;
  }

  feed(chunk: Buffer): void {
    let buffer = Buffer.concat([this.pending, chunk]);
    const skip = Math.min(this.headerLeft, buffer.length);
    this.headerLeft -= skip;
    buffer = buffer.subarray(skip);
    while (buffer.length >= 7) {
      const size = buffer.readUInt32BE(3);
      if (buffer.length < 7 + size + 1) break;
      if (buffer.readUInt8(0) === FRAME_METHOD && size >= 4) {
        this.onMethod(
          buffer.readUInt16BE(1),
          buffer.readUInt32BE(7),
          buffer.subarray(11, 7 + size),
        );
      }
      buffer = buffer.subarray(7 + size + 1);
    }
    this.pending = Buffer.from(buffer);
  }
}

interface ClientStream {
  upstream: Socket;
  reader: FrameReader;
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
  private readonly replies = new Map<Socket, FrameReader>();

  /**
   * Follows what the app sends through `proxy` (the frames' ends and which channels consume), and
   * what the broker answers: `onBrokerClose` hears of each channel it closes, but those its own
   * bogus ack made it close.
   */
  constructor(
    private readonly proxy: TcpProxy,
    private readonly onBrokerClose: (close: BrokerClose) => void = () => undefined,
  ) {
    proxy.tapClient((chunk, _client, upstream) => this.streamOf(upstream).reader.feed(chunk));
    proxy.tapServer((chunk, upstream) => this.replyOf(upstream).feed(chunk));
  }

  private streamOf(upstream: Socket): ClientStream {
    let stream = this.streams.get(upstream);
    if (!stream) {
      const consuming = new Set<number>();
      stream = {
        upstream,
        consuming,
        reader: new FrameReader(PROTOCOL_HEADER, (channel, id) => {
          if (id === BASIC_CONSUME) consuming.add(channel);
          else if (id === CHANNEL_CLOSE || id === CHANNEL_CLOSE_OK) consuming.delete(channel);
        }),
      };
      this.streams.set(upstream, stream);
      upstream.once('close', () => this.streams.delete(upstream));
    }
    return stream;
  }

  private replyOf(upstream: Socket): FrameReader {
    let reader = this.replies.get(upstream);
    if (!reader) {
      // The broker sends no protocol header: its first bytes are a frame.
      reader = new FrameReader(0, (channel, id, args) => {
        if (id !== CHANNEL_CLOSE) return;
        const { code, text } = parseChannelClose(args);
        if (!text.includes(String(BOGUS_TAG))) this.onBrokerClose({ channel, code, text });
      });
      this.replies.set(upstream, reader);
      upstream.once('close', () => this.replies.delete(upstream));
    }
    return reader;
  }

  /**
   * Sends the bogus ack on one consuming channel (`pick` chooses among them), between two of the
   * app's frames. False when no connection through the proxy consumes, or every consuming
   * connection is in the middle of a frame (the caller may try again).
   */
  break(pick: (count: number) => number): boolean {
    const candidates = [...this.streams.values()].flatMap((stream) =>
      stream.reader.between ? [...stream.consuming].map((channel) => ({ stream, channel })) : [],
    );
    if (candidates.length === 0) return false;
    const { stream, channel } = candidates[pick(candidates.length)];
    // The broker never gave a tag this high: it closes the channel with 406.
    this.proxy.sendToServer(stream.upstream, bogusAckFrame(channel, BOGUS_TAG));
    stream.consuming.delete(channel);
    return true;
  }
}

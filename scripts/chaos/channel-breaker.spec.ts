import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';

import type { TcpProxy } from '../../test/support/tcp-proxy.js';
import { bogusAckFrame, ChannelBreaker, type BrokerClose } from './channel-breaker.js';

/** An AMQP method frame from the client: class and method ids, then `args`. */
function methodFrame(channel: number, classId: number, methodId: number, args = Buffer.alloc(0)) {
  const payload = Buffer.concat([
    Buffer.from([classId >> 8, classId & 255, methodId >> 8, methodId & 255]),
    args,
  ]);
  const head = Buffer.alloc(7);
  head.writeUInt8(1, 0);
  head.writeUInt16BE(channel, 1);
  head.writeUInt32BE(payload.length, 3);
  return Buffer.concat([head, payload, Buffer.from([0xce])]);
}

/** channel.close's arguments: reply-code, reply-text, the failing method's class and method ids. */
function closeArgs(code: number, text: string) {
  const args = Buffer.alloc(2 + 1 + text.length + 4);
  args.writeUInt16BE(code, 0);
  args.writeUInt8(text.length, 2);
  args.write(text, 3, 'latin1');
  args.writeUInt16BE(60, 3 + text.length);
  args.writeUInt16BE(80, 5 + text.length);
  return args;
}

/** The calls the breaker makes on its proxy: taps on the client's and the server's bytes, a send. */
function fakeProxy() {
  const sent: Buffer[] = [];
  const sentOn: Socket[] = [];
  let tap: (chunk: Buffer, client: Socket, upstream: Socket) => void = () => undefined;
  let reply: (chunk: Buffer, upstream: Socket) => void = () => undefined;
  const proxy = {
    tapClient: (fn: typeof tap) => (tap = fn),
    tapServer: (fn: typeof reply) => (reply = fn),
    sendToServer: (on: Socket, chunk: Buffer) => {
      sentOn.push(on);
      sent.push(chunk);
    },
  } as unknown as TcpProxy;
  const [client, upstream] = [new EventEmitter(), new EventEmitter()] as unknown as Socket[];
  return {
    proxy,
    sent,
    sentOn,
    feed: (chunk: Buffer) => tap(chunk, client, upstream),
    answer: (chunk: Buffer) => reply(chunk, upstream),
    upstream,
  };
}

const HEADER = Buffer.from('AMQP\x00\x00\x09\x01', 'latin1');
const consume = methodFrame(2, 60, 20, Buffer.from('queue and consumer tag'));

describe('the consumer channel breaker', () => {
  it('should send an ack with an unknown tag on a consuming channel, between two frames only', () => {
    const { proxy, sent, sentOn, feed, upstream } = fakeProxy();
    const breaker = new ChannelBreaker(proxy);
    feed(HEADER);
    feed(methodFrame(1, 20, 10));
    expect(breaker.break(() => 0)).toBe(false);
    feed(consume.subarray(0, 9));
    // The app is in the middle of a frame: a frame of ours now would corrupt its stream.
    expect(breaker.break(() => 0)).toBe(false);
    feed(consume.subarray(9));
    expect(breaker.break(() => 0)).toBe(true);
    expect(sent).toEqual([bogusAckFrame(2, 2n ** 62n)]);
    // To the broker, on the connection that consumes: not back to the app.
    expect(sentOn).toEqual([upstream]);
  });

  it('should forget a channel once it is closed, and a connection once it closes', () => {
    const { proxy, feed, upstream } = fakeProxy();
    const breaker = new ChannelBreaker(proxy);
    feed(Buffer.concat([HEADER, consume, methodFrame(3, 60, 20)]));
    feed(methodFrame(2, 20, 41));
    const picked: number[] = [];
    expect(breaker.break((count) => (picked.push(count), 0))).toBe(true);
    expect(picked).toEqual([1]);
    feed(methodFrame(3, 60, 20));
    upstream.emit('close');
    expect(breaker.break(() => 0)).toBe(false);
  });

  it('should build basic.ack as the broker reads it: class 60, method 80, the tag, not multiple', () => {
    const frame = bogusAckFrame(5, 7n);
    expect(frame.readUInt8(0)).toBe(1);
    expect(frame.readUInt16BE(1)).toBe(5);
    expect(frame.readUInt32BE(3)).toBe(frame.length - 8);
    expect([frame.readUInt16BE(7), frame.readUInt16BE(9)]).toEqual([60, 80]);
    expect(frame.readBigUInt64BE(11)).toBe(7n);
    expect(frame.readUInt8(19)).toBe(0);
    expect(frame.at(-1)).toBe(0xce);
  });

  it('should report each channel the broker closes, but the ones its own bogus ack closed', () => {
    const { proxy, answer } = fakeProxy();
    const closes: BrokerClose[] = [];
    new ChannelBreaker(proxy, (close) => closes.push(close));
    const doubleAck = methodFrame(
      1,
      20,
      40,
      closeArgs(406, 'PRECONDITION_FAILED - unknown delivery tag 12'),
    );
    const ours = methodFrame(
      2,
      20,
      40,
      closeArgs(406, `PRECONDITION_FAILED - unknown delivery tag ${2n ** 62n}`),
    );
    // Split mid-frame, and a close-ok of the app's own close in between: only closes count.
    answer(Buffer.concat([methodFrame(3, 20, 41), doubleAck.subarray(0, 10)]));
    expect(closes).toEqual([]);
    answer(Buffer.concat([doubleAck.subarray(10), ours]));
    expect(closes).toEqual([
      { channel: 1, code: 406, text: 'PRECONDITION_FAILED - unknown delivery tag 12' },
    ]);
  });
});

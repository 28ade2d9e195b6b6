import { createHmac, createSecretKey } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyHs256 } from './hs256.js';

const SECRET = 'a-test-secret';
const KEY = createSecretKey(Buffer.from(SECRET, 'utf8'));
const NOW = 1_800_000_000;

const part = (value: unknown) => Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');

function sign(header: unknown, claims: unknown, secret = SECRET): string {
  const input = `${part(header)}.${part(claims)}`;
  return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
}

const HS256 = { alg: 'HS256', typ: 'JWT' };
const verify = (token: string, now = NOW) => verifyHs256(token, KEY, 5, now);

describe('verifyHs256', () => {
  it('should return the claims of a token signed with the key', () => {
    const claims = { sub: '42', iat: NOW, exp: NOW + 60, role: 'admin' };
    expect(verify(sign(HS256, claims))).toEqual(claims);
  });

  it('should refuse a token signed with another key, or whose payload was changed', () => {
    expect(verify(sign(HS256, { sub: '42', exp: NOW + 60 }, 'another-secret'))).toBeNull();
    const [header, , signature] = sign(HS256, { sub: '42', exp: NOW + 60 }).split('.');
    expect(verify(`${header}.${part({ sub: '1', exp: NOW + 60 })}.${signature}`)).toBeNull();
  });

  it('should refuse another spelling of the same signature bytes', () => {
    const token = sign(HS256, { sub: '42', exp: NOW + 60 });
    // The last base64url character of a 32-byte HMAC carries 2 padding bits, which must be 0.
    const last = token.at(-1)!;
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const sibling = alphabet[alphabet.indexOf(last) ^ 1];
    const respelled = token.slice(0, -1) + sibling;
    const signatureOf = (jwt: string) => Buffer.from(jwt.split('.')[2], 'base64url');
    expect(signatureOf(respelled)).toEqual(signatureOf(token));
    expect(verify(respelled)).toBeNull();
  });

  it('should refuse alg none, another algorithm, a crit header and a header that is no object', () => {
    const claims = { sub: '42', exp: NOW + 60 };
    const unsigned = `${part({ alg: 'none' })}.${part(claims)}.`;
    expect(verify(unsigned)).toBeNull();
    expect(verify(sign({ alg: 'none' }, claims))).toBeNull();
    expect(verify(sign({ alg: 'HS512' }, claims))).toBeNull();
    expect(verify(sign({ alg: 'HS256', crit: ['b64'], b64: false }, claims))).toBeNull();
    expect(verify(sign(['HS256'], claims))).toBeNull();
  });

  it('should refuse a payload that is not a JSON object', () => {
    expect(verify(sign(HS256, [1, 2]))).toBeNull();
    expect(verify(sign(HS256, 'text'))).toBeNull();
    const input = `${part(HS256)}.${Buffer.from('{not json').toString('base64url')}`;
    expect(
      verify(`${input}.${createHmac('sha256', SECRET).update(input).digest('base64url')}`),
    ).toBeNull();
  });

  it('should refuse exp, nbf or iat that is not a number', () => {
    expect(verify(sign(HS256, { sub: '42', exp: String(NOW + 60) }))).toBeNull();
    expect(verify(sign(HS256, { sub: '42', exp: NOW + 60, nbf: 'soon' }))).toBeNull();
    expect(verify(sign(HS256, { sub: '42', exp: NOW + 60, iat: null }))).toBeNull();
  });

  it('should forgive the clock tolerance on exp and nbf, and no more', () => {
    const expired = sign(HS256, { sub: '42', exp: NOW - 5 });
    expect(verify(expired, NOW - 1)).not.toBeNull();
    expect(verify(expired, NOW)).toBeNull();
    const early = sign(HS256, { sub: '42', exp: NOW + 60, nbf: NOW + 5 });
    expect(verify(early, NOW)).not.toBeNull();
    expect(verify(early, NOW - 1)).toBeNull();
  });

  it('should refuse a token that is not three parts', () => {
    const token = sign(HS256, { sub: '42', exp: NOW + 60 });
    expect(verify(`${token}.extra`)).toBeNull();
    expect(verify(token.split('.').slice(0, 2).join('.'))).toBeNull();
  });
});

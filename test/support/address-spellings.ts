/**
 * The ways the probe of issue 17 wrote one IPv4 client address in X-Forwarded-For: with a port,
 * in brackets (with and without a port), as IPv4-mapped IPv6 (dotted and hex) and with leading
 * zeros. Each must be the same client as the plain address.
 */
export function addressSpellings(address: string): string[] {
  const [a, b, c, d] = address.split('.').map(Number);
  const hex = (x: number, y: number) => ((x << 8) | y).toString(16);
  const pad = (n: number) => String(n).padStart(3, '0');
  return [
    `${address}:5555`,
    `[${address}]`,
    `[${address}]:443`,
    `[::ffff:${address}]`,
    `::ffff:${hex(a, b)}:${hex(c, d)}`,
    `${pad(a)}.${pad(b)}.${pad(c)}.${pad(d)}`,
    `${a}.${b}.${c}.0${d}`,
  ];
}

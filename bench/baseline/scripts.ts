// The project's Lua scripts the baseline calls, with their key counts: the same files, so both
// sides run the same atomic step (a spec checks each count against the script's header).
export const BASELINE_SCRIPTS = [
  { name: 'seckillDeduct', file: 'seckill-deduct.lua', numberOfKeys: 10 },
  { name: 'seckillPreheat', file: 'seckill-preheat.lua', numberOfKeys: 2 },
  { name: 'seckillComplete', file: 'seckill-complete.lua', numberOfKeys: 9 },
  { name: 'purchaseUnlock', file: 'purchase-unlock.lua', numberOfKeys: 2 },
] as const;

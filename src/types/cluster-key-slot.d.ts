/** cluster-key-slot (ioredis' own slot function) ships no types. */
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0..16383) of a key, honouring its `{hash tag}`. */
  function calculateSlot(key: string | Buffer): number;
  namespace calculateSlot {
    /** The slot shared by every key, or -1 when they are not all in one slot. */
    function generateMulti(keys: (string | Buffer)[]): number;
  }
  export default calculateSlot;
}

/**
 * The batch memory layout: the `Batch` a trainer receives, how a plan's features map onto it, the
 * shared-memory pack format the decode threads write, and the arena that recycles that memory.
 * It sits below both the reader (which writes packs) and the stream stages (which finish batches).
 *
 * Files, bottom up: cursor.ts (where a row is), types.ts (Batch and the chunk shapes), layout.ts,
 * writers.ts (column → typed-array copies, internal to this folder), pack.ts (the pack format),
 * window-packs.ts (a shuffled window's packs, placed as its reads arrive), window-ids.ts (placing
 * a window's ids, by decode threads in parallel),
 * arena.ts (shared memory for packs), assemble.ts (segments → Batch).
 */
export * from './cursor.js';
export * from './types.js';
export * from './layout.js';
export * from './pack.js';
export * from './window-packs.js';
export * from './window-ids.js';
export * from './arena.js';
export * from './assemble.js';

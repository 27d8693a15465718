/**
 * The batch memory layout: the `Batch` a trainer receives, how a plan's features map onto it, the
 * shared-memory pack format the decode threads write, and the arena that recycles that memory.
 * It sits below both the reader (which writes packs) and the stream stages (which finish batches).
 */
export * from './cursor.js';
export * from './batch.js';
export * from './arena.js';

/**
 * `@sluice/core/transport`: move batches from a loader to a trainer over queue pairs (RDMA-style
 * verbs: posted receives into registered memory, sends, completions) in one process, between
 * threads over shared memory, or over TCP; `serveFeed` and `connectFeed` are the resumable
 * loader and trainer ends of a batch stream.
 *
 * @example
 * import { connectFeed, connectTcp } from '@sluice/core/transport';
 * for await (const b of connectFeed(() => connectTcp({ host: 'loader', port: 7000 }))) train(b);
 */
export * from './types.js';
export { Endpoint } from './engine.js';
export { inProcessPair } from './inproc.js';
export { sabChannel, sabQueuePair, abandonSabPort, type SabPort } from './sab.js';
export { listenTcp, connectTcp, tcpQueuePair, type TcpListener, type ConnectOptions } from './tcp.js';
export { encodeBatch, decodeBatch, decodeBatchMessage, encodeEnd, encodeError, type BatchMessage } from './batch-codec.js';
export { toTransport, fromTransport, type ToTransportOptions, type FromTransportOptions, type TransportFeed } from './stages.js';
export { serveFeed, connectFeed, type ServeFeedOptions, type ServeFeedResult, type ConnectFeedOptions } from './feed.js';

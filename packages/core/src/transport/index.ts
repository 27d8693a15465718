export * from './types.js';
export { Endpoint } from './engine.js';
export { inProcessPair } from './inproc.js';
export { sabChannel, sabQueuePair, abandonSabPort, type SabPort } from './sab.js';
export { listenTcp, connectTcp, tcpQueuePair, type TcpListener, type ConnectOptions } from './tcp.js';
export { encodeBatch, decodeBatch, decodeBatchMessage, encodeEnd, encodeError, type BatchMessage } from './batch-codec.js';
export { toTransport, fromTransport, type ToTransportOptions, type FromTransportOptions, type TransportFeed } from './stages.js';
export { serveFeed, connectFeed, type ServeFeedOptions, type ServeFeedResult, type ConnectFeedOptions } from './feed.js';

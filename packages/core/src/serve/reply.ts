/**
 * The answers the batch server and a cluster worker give in the same words: JSON bodies, the 401
 * for a missing token, the 405 for a method other than GET, the 400 for a target that cannot be
 * read and the 406 for an Accept that neither body format meets. Shared so a client sees one protocol whichever of the two it talks to.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SluiceError } from '@sluice/ops';
import { ARROW_STREAM, MSGPACK, negotiate, type BodyFormat } from './encode.js';
import { TargetError, parseTarget, type Route } from './target.js';

/** Ends `res` with `obj` as JSON and its length. */
export function json(res: ServerResponse, status: number, obj: unknown): void {
  const text = JSON.stringify(obj);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Answers 401 with the Bearer challenge. */
export function deny(res: ServerResponse): void {
  res.setHeader('www-authenticate', 'Bearer');
  json(res, 401, { error: 'missing or wrong bearer token' });
}

/** False (after answering 405 with `allow: GET`) when `req` is not a GET. */
export function acceptGet(req: IncomingMessage, res: ServerResponse): boolean {
  if (req.method === 'GET') return true;
  res.setHeader('allow', 'GET');
  json(res, 405, { error: `method ${req.method} not allowed` });
  return false;
}

/** The route `url` names, or null after answering 400 with the TargetError's one line. */
export function routeOf(url: string, res: ServerResponse): Route | null {
  try {
    return parseTarget(url);
  } catch (e) {
    if (!(e instanceof TargetError)) throw e;
    json(res, 400, { error: e.message });
    return null;
  }
}

/** The body format `req` accepts, or null after answering 406 naming the two on offer. */
export function bodyFormat(req: IncomingMessage, res: ServerResponse): BodyFormat | null {
  const format = negotiate(req.headers.accept);
  if (format === null) json(res, 406, { error: `can send ${ARROW_STREAM} or ${MSGPACK}` });
  return format;
}

/**
 * The one line for a server that cannot listen (`sluice serve`, a cluster worker): the port in use,
 * a privileged port, an address this machine does not have, in words rather than Node's error codes.
 */
export function listenError(host: string, port: number, e: NodeJS.ErrnoException): SluiceError {
  const why =
    e.code === 'EADDRINUSE'
      ? 'the port is in use'
      : e.code === 'EACCES'
        ? 'permission denied (ports below 1024 need privileges)'
        : e.code === 'EADDRNOTAVAIL' || e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN'
          ? 'this machine has no such address'
          : e.message;
  return new SluiceError(`cannot listen on ${host}:${port}: ${why}`, {}, { cause: e });
}

import { AwsClient } from 'aws4fetch';
import type { S3Access } from './access.js';
import { S3Error, refusal, xmlAll, xmlOne } from './errors.js';
import { s3Url } from './url.js';

/** Bytes of an object and what the store said about the whole object while sending them. */
export interface S3Bytes {
  readonly bytes: Uint8Array;
  /** Offset of `bytes[0]` in the object. */
  readonly start: number;
  /** The object's size. */
  readonly size: number;
  readonly etag: string;
}

/** Tries, delays and timeouts of an S3Client. */
export interface S3RetryOptions {
  /** Tries after the first, for 5xx, throttling (429, SlowDown), a lost connection or a cut body (default 5). */
  readonly retries?: number;
  /** The first back-off in ms; each later one doubles, with full jitter (default 100). */
  readonly baseDelayMs?: number;
  /** Each request's limit in ms, its body included (default 60 000). */
  readonly timeoutMs?: number;
}

/** Status codes and S3 error codes worth another try: the store is busy or failed for a moment. */
const RETRYABLE_STATUS = new Set([500, 502, 503, 504, 429]);
const RETRYABLE_CODES = new Set(['SlowDown', 'InternalError', 'ServiceUnavailable', 'RequestTimeout', 'RequestTimeTooSkewed']);

/** Percent-encodes a key for the path of a signed URL: every byte but unreserved ones and "/". */
const encodeKey = (key: string): string =>
  key
    .split('/')
    .map((p) => encodeURIComponent(p).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');

/** Why fetch failed, in a few words (undici hides the cause: ECONNREFUSED, "other side closed"). */
const causeOf = (e: unknown): string => {
  const c = (e as { cause?: { code?: string; message?: string } }).cause;
  return c?.code ?? c?.message ?? (e instanceof Error ? e.message : String(e));
};

/** A body that ended before it should have, or a connection lost while reading it: worth another try. */
class CutShort extends Error {}

/**
 * A small S3 client: SigV4-signed GETs (aws4fetch) with ranges, ListObjectsV2, retries with
 * back-off on 5xx, throttling, lost connections and bodies cut short. Every error names the
 * bucket and key and what the store said.
 *
 * @example
 * const s3 = new S3Client(await resolveS3Access());
 * const { bytes, size, etag } = await s3.get('data', 'train/part-0.parquet', { start: 0, end: 4 });
 */
export class S3Client {
  private readonly aws: AwsClient;
  private readonly retries: number;
  private readonly baseDelayMs: number;
  private readonly timeoutMs: number;
  /** Requests sent, retries included (benchmarks and tests count them). */
  requests = 0;
  /** Tries repeated after a failure. */
  retried = 0;

  constructor(
    readonly access: S3Access,
    options: S3RetryOptions = {},
  ) {
    // aws4fetch retries 5xx itself but not a lost connection or a cut body: this class retries all of them.
    this.aws = new AwsClient({
      accessKeyId: access.accessKeyId,
      secretAccessKey: access.secretAccessKey,
      ...(access.sessionToken !== undefined ? { sessionToken: access.sessionToken } : {}),
      service: 's3',
      region: access.region,
      retries: 0,
    });
    this.retries = options.retries ?? 5;
    this.baseDelayMs = options.baseDelayMs ?? 100;
    this.timeoutMs = options.timeoutMs ?? 60_000;
  }

  /** The request URL for a key of a bucket (path-style or virtual-hosted, as the access says). */
  url(bucket: string, key: string, query = ''): string {
    const q = query === '' ? '' : `?${query}`;
    if (this.access.pathStyle) return `${this.access.endpoint}/${encodeURIComponent(bucket)}/${encodeKey(key)}${q}`;
    const u = new URL(this.access.endpoint);
    return `${u.protocol}//${bucket}.${u.host}/${encodeKey(key)}${q}`;
  }

  /**
   * Bytes [start, end) of an object (`range` absent: all of it; `{ suffix: n }`: its last n).
   * With `etag`, an object whose ETag is no longer that one is an S3Error with code `Changed`.
   */
  async get(bucket: string, key: string, range?: { start: number; end: number } | { suffix: number }, etag?: string): Promise<S3Bytes> {
    const file = s3Url(bucket, key);
    const headers: Record<string, string> = {};
    if (range !== undefined) headers.range = 'suffix' in range ? `bytes=-${range.suffix}` : `bytes=${range.start}-${range.end - 1}`;
    return this.send(this.url(bucket, key), headers, file, async (res) => {
      const got = res.headers.get('etag') ?? '';
      if (etag !== undefined && got !== etag) {
        await res.body?.cancel().catch(() => undefined);
        throw new S3Error(`the object changed while it was read (ETag ${etag} became ${got}): start the run again`, 'Changed', res.status, file);
      }
      const cr = res.headers.get('content-range');
      const m = cr === null ? null : /bytes (\d+)-(\d+)\/(\d+|\*)/.exec(cr);
      if (range !== undefined && res.status !== 206 && !(res.status === 200 && 'suffix' in range)) {
        await res.body?.cancel().catch(() => undefined);
        throw new S3Error(`the store answered ${res.status}, not 206 Partial Content, to a range request`, 'NoRange', res.status, file);
      }
      const bytes = await readBody(res);
      const start = m !== null ? Number(m[1]) : 0;
      const expect = m !== null ? Number(m[2]) - start + 1 : Number(res.headers.get('content-length') ?? bytes.length);
      if (bytes.length !== expect) throw new CutShort(`got ${bytes.length} of ${expect} bytes`);
      const size = m !== null && m[3] !== '*' ? Number(m[3]) : start + bytes.length;
      return { bytes, start, size, etag: got };
    });
  }

  /**
   * Every key under `prefix` with its size, in the store's (lexicographic) order, one
   * ListObjectsV2 page (up to 1000 keys) at a time.
   */
  async *list(bucket: string, prefix: string): AsyncGenerator<{ key: string; size: number }> {
    let token: string | undefined;
    do {
      const q = new URLSearchParams({ 'list-type': '2', prefix, ...(token !== undefined ? { 'continuation-token': token } : {}) });
      // Sorted query keys and %20 for spaces: SigV4's canonical query string.
      const query = [...q]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
        .join('&');
      const xml = await this.send(this.url(bucket, '', query), {}, s3Url(bucket, prefix), async (res) => new TextDecoder().decode(await readBody(res)));
      for (const c of xmlAll(xml, 'Contents')) yield { key: xmlOne(c, 'Key') ?? '', size: Number(xmlOne(c, 'Size') ?? 0) };
      token = xmlOne(xml, 'IsTruncated') === 'true' ? xmlOne(xml, 'NextContinuationToken') : undefined;
    } while (token !== undefined && token !== '');
  }

  /** Sends a signed GET until it succeeds, fails for good, or runs out of tries; `read` takes a 2xx answer. */
  private async send<T>(url: string, headers: Record<string, string>, file: string, read: (res: Response) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.retries;
      let res: Response;
      try {
        this.requests++;
        // Signed afresh each try: the signature carries the time.
        const req = await this.aws.sign(url, { method: 'GET', headers });
        res = await fetch(req, { signal: AbortSignal.timeout(this.timeoutMs) });
      } catch (e) {
        if (!last) {
          await this.backoff(attempt);
          continue;
        }
        throw new S3Error(`cannot reach the store at ${this.access.endpoint} (${causeOf(e)}) after ${attempt + 1} tries`, 'Unreachable', 0, file);
      }
      if (res.ok) {
        try {
          return await read(res);
        } catch (e) {
          if (e instanceof S3Error) throw e;
          if (!last) {
            await this.backoff(attempt);
            continue;
          }
          const why = e instanceof CutShort ? e.message : `the connection broke (${causeOf(e)})`;
          throw new S3Error(`the answer was cut short: ${why}, ${attempt + 1} tries`, 'CutShort', res.status, file);
        }
      }
      const body = await res.text().catch(() => '');
      const code = xmlOne(body, 'Code') ?? '';
      if (!last && (RETRYABLE_STATUS.has(res.status) || RETRYABLE_CODES.has(code))) {
        await this.backoff(attempt);
        continue;
      }
      const err = refusal(res.status, body, res.statusText, file, this.access.from);
      throw RETRYABLE_STATUS.has(res.status) ? new S3Error(`${err.detail} after ${attempt + 1} tries`, err.code, err.status, file) : err;
    }
  }

  private async backoff(attempt: number): Promise<void> {
    this.retried++;
    await new Promise((r) => setTimeout(r, Math.random() * this.baseDelayMs * 2 ** attempt));
  }
}

/** The whole body; a connection lost part way is a CutShort (retried). */
async function readBody(res: Response): Promise<Uint8Array> {
  try {
    return new Uint8Array(await res.arrayBuffer());
  } catch (e) {
    throw new CutShort(`the connection broke (${causeOf(e)})`);
  }
}

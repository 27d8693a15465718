import { InputError } from '@sluice/ops';

/**
 * A request the store refused or that could not complete, naming the bucket and key and what the
 * store said (its HTTP status and S3 error code, e.g. `403 SignatureDoesNotMatch`).
 *
 * @example
 * try { await client.get('data', 'train/missing.parquet'); } catch (e) { if (e instanceof S3Error && e.code === 'NoSuchKey') skip(); }
 */
export class S3Error extends InputError {
  override name = 'S3Error';
  constructor(
    message: string,
    /** The store's error code (`NoSuchKey`, `AccessDenied`, …), or a word of ours (`Unreachable`, `Changed`). */
    readonly code: string,
    /** The HTTP status, or 0 when no answer came. */
    readonly status: number,
    file?: string,
  ) {
    super(message, file === undefined ? {} : { file });
    this.detail = message;
  }
  /** The message without the object's name in front (for a caller that names it itself). */
  readonly detail: string;
}

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };

/**
 * Undoes XML's escapes in element text: the five named entities and numeric references.
 *
 * @example
 * xmlText('a&amp;b&#x20;c'); // 'a&b c'
 */
export function xmlText(s: string): string {
  return s.replace(/&(#x[0-9a-f]+|#[0-9]+|[a-z]+);/gi, (m, e: string) => {
    if (e[0] === '#') return String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
    return ENTITIES[e] ?? m;
  });
}

/**
 * Text of every `<tag>…</tag>` in an S3 XML answer (the answers are flat and never nest a tag in itself).
 *
 * @example
 * xmlAll('<Contents><Key>a</Key></Contents><Contents><Key>b</Key></Contents>', 'Key'); // ['a', 'b']
 */
export function xmlAll(xml: string, tag: string): string[] {
  const out: string[] = [];
  const re = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g');
  for (let m = re.exec(xml); m !== null; m = re.exec(xml)) out.push(xmlText(m[1]!));
  return out;
}

/**
 * Text of the first `<tag>…</tag>`, or undefined.
 *
 * @example
 * xmlOne('<Error><Code>NoSuchKey</Code></Error>', 'Code'); // 'NoSuchKey'
 */
export const xmlOne = (xml: string, tag: string): string | undefined => xmlAll(xml, tag)[0];

/** What to tell the user for an error code: the likely cause, in words. */
const HINTS: Readonly<Record<string, string>> = {
  SignatureDoesNotMatch: 'the secret key does not match the access key id',
  InvalidAccessKeyId: 'the store does not know this access key id',
  AccessDenied: 'these credentials may not read it',
  NoSuchKey: 'no such object',
  NoSuchBucket: 'no such bucket',
  ExpiredToken: 'the session token has expired',
  SlowDown: 'the store is throttling requests',
  ServiceUnavailable: 'the store is unavailable',
  InternalError: 'the store failed',
  InvalidToken: 'the session token is not valid',
  PermanentRedirect: 'the bucket is in another region: set AWS_REGION to it',
  AuthorizationHeaderMalformed: 'the region or credentials are wrong for this bucket: check AWS_REGION',
};

/**
 * The error for a refused request: `no such object (404 NoSuchKey: The specified key does not
 * exist.)`, naming the object or bucket in `file` and, for a refused signature, where the
 * credentials came from.
 *
 * @example
 * refusal(404, '<Error><Code>NoSuchKey</Code></Error>', 'Not Found', 's3://b/k', 'the environment').message; // 'file s3://b/k: no such object (404 NoSuchKey)'
 */
export function refusal(status: number, body: string, statusText: string, file: string, credentialsFrom: string): S3Error {
  const code = xmlOne(body, 'Code') ?? (status === 404 ? 'NotFound' : status === 403 ? 'Forbidden' : statusText.replace(/\s+/g, '') || 'Error');
  const said = xmlOne(body, 'Message');
  const bucket = /^s3:\/\/([^/]*)/.exec(file)?.[1];
  const hint = code === 'NoSuchBucket' && bucket !== undefined ? `no such bucket "${bucket}"` : HINTS[code];
  const auth = status === 403 || /Signature|AccessKey|Token/.test(code) ? `; credentials from ${credentialsFrom}` : '';
  const what = `${status} ${code}${said !== undefined && said !== '' ? `: ${said.replace(/\s+/g, ' ').trim()}` : ''}`;
  return new S3Error(`${hint ?? 'the store refused the request'} (${what})${auth}`, code, status, file);
}

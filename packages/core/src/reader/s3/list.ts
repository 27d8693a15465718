import picomatch from 'picomatch';
import { resolveS3Access, type S3Access } from './access.js';
import { S3Client } from './client.js';
import { S3Error } from './errors.js';
import { parseS3Url, s3Url } from './url.js';

/** Whether a key (not a whole input) is a glob: `*`, `?`, `[…]`, `{a,b}`. */
const isGlob = (key: string): boolean => picomatch.scan(key).isGlob;

/** The `.parquet` keys under a prefix, as `s3://` URLs, in key order; an empty listing is an error naming the prefix. */
async function parquetUnder(client: S3Client, bucket: string, prefix: string, input: string): Promise<string[]> {
  const found: string[] = [];
  let others = 0;
  for await (const o of client.list(bucket, prefix)) {
    if (o.key.endsWith('.parquet')) found.push(s3Url(bucket, o.key));
    else if (!o.key.endsWith('/')) others++;
  }
  if (found.length === 0) {
    const why = others > 0 ? `${others} object${others === 1 ? '' : 's'}, none ending in .parquet` : 'ListObjectsV2 listed nothing';
    throw new S3Error(`the prefix holds no .parquet objects (${why})`, 'EmptyPrefix', 200, input);
  }
  return found;
}

/**
 * Expands one `s3://` input into the objects it names, listing with ListObjectsV2 (paginated):
 * a prefix (`s3://b/train/`, or `s3://b` for the bucket) gives every `.parquet` key under it; a
 * glob (`s3://b/train/part-*.parquet`) the keys it matches (`*` stays within one `/` level, `**`
 * crosses them, as for local paths); any other key the object itself — or, when there is no such
 * object but there are `.parquet` keys under `key/`, those. An object is checked with a 4-byte
 * range read, so a missing key, a missing bucket or a refused signature fails here, naming it.
 *
 * @example
 * await resolveS3Input('s3://data/train/'); // ['s3://data/train/part-0.parquet', 's3://data/train/part-1.parquet']
 */
export async function resolveS3Input(input: string, access?: S3Access): Promise<string[]> {
  const { bucket, key } = parseS3Url(input);
  const client = new S3Client(access ?? (await resolveS3Access()));
  if (key === '' || key.endsWith('/')) return parquetUnder(client, bucket, key, input);
  if (isGlob(key)) {
    const { base } = picomatch.scan(key);
    const match = picomatch(key, { dot: true });
    const found: string[] = [];
    for await (const o of client.list(bucket, base === '' ? '' : `${base}/`)) if (match(o.key)) found.push(s3Url(bucket, o.key));
    if (found.length === 0) throw new S3Error('no objects match this pattern', 'EmptyPrefix', 200, input);
    return found;
  }
  try {
    const head = await client.get(bucket, key, { start: 0, end: 4 });
    if (new TextDecoder().decode(head.bytes) !== 'PAR1') throw new S3Error('not a Parquet file (it does not start with PAR1)', 'NotParquet', 206, input);
    return [input];
  } catch (e) {
    if (!(e instanceof S3Error) || e.code !== 'NoSuchKey') throw e;
    // `s3://b/train` for the prefix train/, as a local directory is named without its slash.
    const under = await parquetUnder(client, bucket, `${key}/`, input).catch(() => null);
    if (under === null) throw e;
    return under;
  }
}

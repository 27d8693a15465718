/** An object (or a prefix, or a glob over keys) in a bucket, from an `s3://bucket/key` input. */
export interface S3Location {
  readonly bucket: string;
  /** The key, a prefix ending in "/" (or "" for the whole bucket), or a glob over keys. */
  readonly key: string;
}

// The test lives in util/ so that plan/ can tell s3:// objects apart without importing the reader.
export { isS3Url } from '../../util/url.js';

/**
 * Splits `s3://bucket/key` into bucket and key; throws a RangeError naming the input when it has
 * no bucket. The key is kept as written (not URL-decoded): S3 keys may hold "%" and "+".
 *
 * @example
 * parseS3Url('s3://data/train/'); // { bucket: 'data', key: 'train/' }
 */
export function parseS3Url(s: string): S3Location {
  const m = /^s3:\/\/([^/]*)\/?(.*)$/is.exec(s);
  if (m === null || m[1] === '') throw new RangeError(`${s} is not an s3:// location: expected s3://bucket/key`);
  return { bucket: m[1]!, key: m[2]! };
}

/**
 * The `s3://bucket/key` form of a location.
 *
 * @example
 * s3Url('data', 'train/part-0.parquet'); // 's3://data/train/part-0.parquet'
 */
export const s3Url = (bucket: string, key: string): string => `s3://${bucket}/${key}`;

import { InputError } from '@sluice/ops';

/** An object (or a prefix, or a glob over keys) in a bucket, from an `s3://bucket/key` input. */
export interface S3Location {
  readonly bucket: string;
  /** The key, a prefix ending in "/" (or "" for the whole bucket), or a glob over keys. */
  readonly key: string;
}

// The test lives in util/ so that plan/ can tell s3:// objects apart without importing the reader.
export { isS3Url } from '../../util/url.js';

/**
 * Splits `s3://bucket/key` into bucket and key; throws an InputError naming the input when it has
 * no bucket. The key is kept as written (not URL-decoded): S3 keys may hold "%" and "+".
 *
 * @example
 * parseS3Url('s3://data/train/'); // { bucket: 'data', key: 'train/' }
 */
export function parseS3Url(s: string): S3Location {
  const m = /^s3:\/\/([^/]*)\/?(.*)$/is.exec(s);
  // An InputError, as for a local path that is not there: the CLI prints it as one line (a RangeError was an "unexpected error").
  if (m === null || m[1] === '') throw new InputError(`${s} names no bucket: expected s3://bucket/key (or s3://bucket/prefix/)`);
  return { bucket: m[1]!, key: m[2]! };
}

/**
 * The `s3://bucket/key` form of a location.
 *
 * @example
 * s3Url('data', 'train/part-0.parquet'); // 's3://data/train/part-0.parquet'
 */
export const s3Url = (bucket: string, key: string): string => `s3://${bucket}/${key}`;

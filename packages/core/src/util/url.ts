/** Whether an input names a URL (http(s)://, or s3:// for object storage) rather than a local path. */
export const isUrl = (s: string): boolean => /^(https?|s3):\/\//i.test(s);

/**
 * Whether an input names an object store location (`s3://bucket/key`): read by Sluice's own decoder, like a local file.
 *
 * @example
 * isS3Url('s3://data/train/'); // true
 */
export const isS3Url = (s: string): boolean => /^s3:\/\//i.test(s);

/**
 * Checks, with one small request, that `url` can be read the way the Parquet reader reads it:
 * reachable, found, answering range requests with 206 Partial Content, and starting with
 * Parquet's magic. Returns the problem in words, or null. (The reader itself reports all of these
 * as undecodable data.)
 */
export async function urlProblem(url: string, timeoutMs = 30_000): Promise<string | null> {
  let r: Response;
  try {
    r = await fetch(url, { headers: { range: 'bytes=0-3' }, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    return `cannot reach it (${cause?.code ?? cause?.message ?? (e as Error).message})`;
  }
  try {
    if (r.status === 206) {
      const head = new Uint8Array(await r.arrayBuffer());
      return head.byteLength >= 4 && new TextDecoder().decode(head.subarray(0, 4)) === 'PAR1' ? null : 'not a Parquet file (it does not start with PAR1)';
    }
    if (r.status === 200)
      return 'the server ignores HTTP range requests (it answered 200, not 206 Partial Content, to a Range request); reading Parquet over HTTP needs them';
    return `HTTP ${r.status}${r.statusText ? ` ${r.statusText}` : ''}`;
  } finally {
    // Never download a whole file that a server sent in answer to the range.
    await r.body?.cancel().catch(() => undefined);
  }
}

import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { parse as parseIni } from 'ini';
import { InputError } from '@sluice/ops';

/** How to reach an S3-compatible store and sign for it: what `resolveS3Access` found. */
export interface S3Access {
  /** Scheme, host and port, no trailing slash: `https://s3.us-east-1.amazonaws.com`, `http://127.0.0.1:9000`. */
  readonly endpoint: string;
  readonly region: string;
  /** `endpoint/bucket/key` (path-style) rather than `bucket.endpoint/key` (virtual-hosted). */
  readonly pathStyle: boolean;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
  /** Where the credentials came from, for messages: "environment", "profile dev in ~/.aws/credentials". */
  readonly from: string;
}

type Env = Readonly<Record<string, string | undefined>>;
type Section = Readonly<Record<string, unknown>>;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined);
const set = (v: string | undefined): string | undefined => (v !== undefined && v.trim() !== '' ? v.trim() : undefined);

/** One profile of an AWS INI file, or null when the file is absent (`[name]` in credentials, `[profile name]` in config). */
async function profileOf(file: string, profile: string, config: boolean): Promise<{ section: Section | null; exists: boolean }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return { section: null, exists: false };
  }
  const all = parseIni(text) as Record<string, Section>;
  const section = config && profile !== 'default' ? (all[`profile ${profile}`] ?? null) : (all[profile] ?? (config ? (all['profile default'] ?? null) : null));
  return { section, exists: true };
}

/**
 * Finds credentials, region and endpoint the way the AWS CLI and SDKs do, in this order:
 * `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`; then profile `AWS_PROFILE`
 * (else "default") of `AWS_SHARED_CREDENTIALS_FILE` (else ~/.aws/credentials), then of
 * `AWS_CONFIG_FILE` (else ~/.aws/config). Region: `AWS_REGION`, `AWS_DEFAULT_REGION`, the
 * profile's `region`, else us-east-1. Endpoint: `AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`, the
 * profile's `endpoint_url`, else AWS's regional one. A custom endpoint (MinIO, Ceph, Swift, R2)
 * is addressed path-style; `AWS_S3_FORCE_PATH_STYLE=true|false` overrides. No credentials is an
 * InputError naming everywhere it looked.
 *
 * @example
 * const access = await resolveS3Access(); // { endpoint: 'http://127.0.0.1:8080', region: 'us-east-1', pathStyle: true, ... }
 */
export async function resolveS3Access(env: Env = process.env): Promise<S3Access> {
  const home = homedir();
  const credFile = set(env.AWS_SHARED_CREDENTIALS_FILE) ?? join(home, '.aws', 'credentials');
  const configFile = set(env.AWS_CONFIG_FILE) ?? join(home, '.aws', 'config');
  const profile = set(env.AWS_PROFILE) ?? 'default';
  const cred = await profileOf(credFile, profile, false);
  const conf = await profileOf(configFile, profile, true);
  if (set(env.AWS_PROFILE) !== undefined && cred.section === null && conf.section === null) {
    throw new InputError(`AWS_PROFILE=${profile}, but neither ${credFile} nor ${configFile} has that profile`);
  }

  const region = set(env.AWS_REGION) ?? set(env.AWS_DEFAULT_REGION) ?? str(conf.section?.region) ?? 'us-east-1';
  const given = set(env.AWS_ENDPOINT_URL_S3) ?? set(env.AWS_ENDPOINT_URL) ?? str(conf.section?.endpoint_url);
  let endpoint = `https://s3.${region}.amazonaws.com`;
  if (given !== undefined) {
    let u: URL;
    try {
      u = new URL(given);
    } catch {
      throw new InputError(`the S3 endpoint "${given}" is not a URL (expected e.g. http://127.0.0.1:9000)`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new InputError(`the S3 endpoint "${given}" must be http:// or https://`);
    endpoint = `${u.protocol}//${u.host}`;
  }
  const force = set(env.AWS_S3_FORCE_PATH_STYLE)?.toLowerCase();
  const pathStyle = force === 'true' || force === '1' ? true : force === 'false' || force === '0' ? false : given !== undefined;

  const keyId = set(env.AWS_ACCESS_KEY_ID);
  const secret = set(env.AWS_SECRET_ACCESS_KEY);
  if (keyId !== undefined || secret !== undefined) {
    if (keyId === undefined || secret === undefined) {
      throw new InputError(
        `${keyId === undefined ? 'AWS_ACCESS_KEY_ID' : 'AWS_SECRET_ACCESS_KEY'} is not set, but ${keyId === undefined ? 'AWS_SECRET_ACCESS_KEY' : 'AWS_ACCESS_KEY_ID'} is: set both`,
      );
    }
    const token = set(env.AWS_SESSION_TOKEN);
    return {
      endpoint,
      region,
      pathStyle,
      accessKeyId: keyId,
      secretAccessKey: secret,
      ...(token !== undefined ? { sessionToken: token } : {}),
      from: 'the environment',
    };
  }
  for (const [src, file] of [
    [cred, credFile],
    [conf, configFile],
  ] as const) {
    const id = str(src.section?.aws_access_key_id);
    const key = str(src.section?.aws_secret_access_key);
    if (id === undefined && key === undefined) continue;
    if (id === undefined || key === undefined)
      throw new InputError(`profile ${profile} in ${file} has ${id === undefined ? 'no aws_access_key_id' : 'no aws_secret_access_key'}`);
    const token = str(src.section?.aws_session_token);
    return {
      endpoint,
      region,
      pathStyle,
      accessKeyId: id,
      secretAccessKey: key,
      ...(token !== undefined ? { sessionToken: token } : {}),
      from: `profile ${profile} in ${file}`,
    };
  }
  const where = (file: string, exists: boolean): string => `${file}${exists ? ` (no profile ${profile} with keys)` : ' (no such file)'}`;
  throw new InputError(
    `no S3 credentials found: looked in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ${where(credFile, cred.exists)} and ${where(configFile, conf.exists)}`,
  );
}

/** Where s3:// credentials, region and endpoint come from (resolveS3Access), and the messages when they are missing. */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveS3Access } from '../../src/reader/s3/access.js';
import { tempDir } from '../helpers.js';

const dir = tempDir('sluice-s3-access-');
const creds = join(dir, 'credentials');
const config = join(dir, 'config');
writeFileSync(
  creds,
  '[default]\naws_access_key_id = AKIDEFAULT\naws_secret_access_key = s3cret\n\n[dev]\naws_access_key_id = AKIDEV\naws_secret_access_key = devsecret\naws_session_token = tok\n',
);
writeFileSync(
  config,
  '[default]\nregion = eu-west-1\n\n[profile dev]\nregion = eu-central-1\nendpoint_url = http://127.0.0.1:9000\n\n[profile cfgonly]\naws_access_key_id = AKICFG\naws_secret_access_key = cfgsecret\n',
);
const files = { AWS_SHARED_CREDENTIALS_FILE: creds, AWS_CONFIG_FILE: config };

describe('resolveS3Access', () => {
  it('takes the environment first, with a session token, AWS regional endpoint, virtual-hosted', async () => {
    const a = await resolveS3Access({
      ...files,
      AWS_ACCESS_KEY_ID: 'AKIENV',
      AWS_SECRET_ACCESS_KEY: 'envsecret',
      AWS_SESSION_TOKEN: 'st',
      AWS_REGION: 'us-west-2',
    });
    expect(a).toEqual({
      endpoint: 'https://s3.us-west-2.amazonaws.com',
      region: 'us-west-2',
      pathStyle: false,
      accessKeyId: 'AKIENV',
      secretAccessKey: 'envsecret',
      sessionToken: 'st',
      from: 'the environment',
    });
  });

  it('then the default profile of the credentials file, with the config file’s region', async () => {
    const a = await resolveS3Access(files);
    expect(a).toMatchObject({ accessKeyId: 'AKIDEFAULT', secretAccessKey: 's3cret', region: 'eu-west-1', from: `profile default in ${creds}` });
    expect(a.sessionToken).toBeUndefined();
  });

  it('AWS_PROFILE picks a profile; its endpoint_url means path-style; AWS_ENDPOINT_URL overrides it', async () => {
    const a = await resolveS3Access({ ...files, AWS_PROFILE: 'dev' });
    expect(a).toMatchObject({ accessKeyId: 'AKIDEV', sessionToken: 'tok', region: 'eu-central-1', endpoint: 'http://127.0.0.1:9000', pathStyle: true });
    const b = await resolveS3Access({
      ...files,
      AWS_PROFILE: 'dev',
      AWS_ENDPOINT_URL: 'https://minio.example:9443/ignored/path',
      AWS_S3_FORCE_PATH_STYLE: 'false',
    });
    expect(b).toMatchObject({ endpoint: 'https://minio.example:9443', pathStyle: false });
    const c = await resolveS3Access({ ...files, AWS_PROFILE: 'cfgonly' });
    expect(c).toMatchObject({ accessKeyId: 'AKICFG', from: `profile cfgonly in ${config}` });
  });

  it('says where it looked when it finds nothing, and what is wrong with half a pair or a bad endpoint', async () => {
    const home = join(dir, 'home');
    mkdirSync(join(home, '.aws'), { recursive: true });
    const none = { AWS_SHARED_CREDENTIALS_FILE: join(home, 'nope'), AWS_CONFIG_FILE: config };
    await expect(resolveS3Access(none)).rejects.toThrow(
      `no S3 credentials found: looked in AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, ${join(home, 'nope')} (no such file) and ${config} (no profile default with keys)`,
    );
    await expect(resolveS3Access({ ...files, AWS_PROFILE: 'ghost' })).rejects.toThrow(`AWS_PROFILE=ghost, but neither ${creds} nor ${config} has that profile`);
    await expect(resolveS3Access({ ...files, AWS_ACCESS_KEY_ID: 'x' })).rejects.toThrow('AWS_SECRET_ACCESS_KEY is not set, but AWS_ACCESS_KEY_ID is: set both');
    await expect(resolveS3Access({ ...files, AWS_ENDPOINT_URL: 'localhost:9000' })).rejects.toThrow(
      'the S3 endpoint "localhost:9000" must be http:// or https://',
    );
    await expect(resolveS3Access({ ...files, AWS_ENDPOINT_URL: 'not a url' })).rejects.toThrow('the S3 endpoint "not a url" is not a URL');
  });
});

/**
 * The WebAssembly module a package ships as a base64 literal inside one of its JS files. zstddec
 * and hysnappy both do; the decoders (../zstd.ts, snappy.ts) instantiate the module
 * themselves so that pages decompress into reused wasm memory rather than a fresh buffer each.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';

/**
 * The bytes of the module that `literal` (one capture group: the base64 text) finds in `file`,
 * which lies beside `pkg`'s main file; null where the package is missing or its layout differs,
 * so that the caller falls back to the package's own API.
 */
export function embeddedWasm(pkg: string, file: string, literal: RegExp): Uint8Array | null {
  try {
    const main = createRequire(import.meta.url).resolve(pkg);
    const m = literal.exec(fs.readFileSync(main.replace(/[^/\\]*$/, file), 'utf8'));
    return m === null ? null : Buffer.from(m[1]!, 'base64');
  } catch {
    return null;
  }
}

/**
 * Keeping Dawn's adapter-discovery warnings off the user's terminal.
 *
 * The first time an instance looks for adapters, Dawn clamps two limits that some Vulkan drivers
 * report as huge (Mesa's llvmpipe says 1,000,000, AMD's RADV 500,000) and announces it:
 *
 *     Warning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 1000000 to 16 to fit dynamic offset allocation limit.
 *
 * and the same for storage buffers. Sluice binds no dynamic-offset buffers, so these lines tell a
 * user nothing they can act on. They do not come from JavaScript: Dawn's NormalizeLimits
 * (src/dawn/native/Limits.cpp) logs them through dawn::WarningLog, which fprintf's them to the
 * process's stderr, fd 2 (src/dawn/common/Log.cpp). Nothing turns that off at run time. No Dawn
 * toggle or create() flag exists for it, and the clamp runs on the adapter's own limits before
 * any device or limit is requested. Console hooks and process.stderr never see the lines.
 *
 * The least-bad fix left is at the file descriptor. The call that prints them (requestAdapter,
 * synchronously, once per instance) runs with fd 2 pointed at an in-memory file, using libc's
 * memfd_create and dup2 through koffi, the way util/huge-pages.ts in @sluice/core calls madvise.
 * Then fd 2 is restored, and everything written to it meanwhile is copied to stderr except
 * those two lines, so a real Dawn error still reaches the user. The redirect lasts one
 * synchronous call, so no JavaScript on this thread writes in that window; what another thread
 * writes to fd 2 meanwhile is caught and passed on the same way. Where koffi does not load, or
 * off Linux, the call runs as it is and the lines still show.
 */
import { createRequire } from 'node:module';
import { fstatSync, readSync, writeSync } from 'node:fs';

/** Dawn's two limit-clamping lines (the message in src/dawn/native/Limits.cpp, with Log.cpp's prefix). */
const LIMIT_CLAMP =
  /^Warning: maxDynamic(?:Uniform|Storage)BuffersPerPipelineLayout artificially reduced from \d+ to \d+ to fit dynamic offset allocation limit\.(?:\n|$)/gm;

/** `text` without Dawn's limit-clamping warnings; every other line, a real error included, kept as written. */
export function dropLimitClampWarnings(text: string): string {
  return text.replace(LIMIT_CLAMP, '');
}

/** What this file calls of libc (through koffi). */
interface Libc {
  memfd_create(name: string, flags: number): number;
  dup(fd: number): number;
  dup2(from: number, to: number): number;
  close(fd: number): number;
}

/** MFD_CLOEXEC in Linux's uapi/linux/memfd.h: a child process started meanwhile does not inherit the file. */
const MFD_CLOEXEC = 1;
const STDERR = 2;

let libc: Libc | null | undefined;

function loadLibc(): Libc | null {
  if (process.platform !== 'linux') return null;
  try {
    const koffi = createRequire(import.meta.url)('koffi') as { load(path: string): { func(signature: string): (...args: unknown[]) => unknown } };
    const c = koffi.load('libc.so.6');
    return {
      memfd_create: c.func('int memfd_create(const char *name, unsigned int flags)') as Libc['memfd_create'],
      dup: c.func('int dup(int fd)') as Libc['dup'],
      dup2: c.func('int dup2(int oldfd, int newfd)') as Libc['dup2'],
      close: c.func('int close(int fd)') as Libc['close'],
    };
  } catch {
    return null;
  }
}

/** Whether `withoutLimitClampWarnings` can filter in this process (koffi loaded, on Linux). */
export function canFilterDawnLog(): boolean {
  libc ??= loadLibc();
  return libc !== null;
}

/**
 * `call()`, with whatever native code writes to fd 2 while it runs passed on to stderr afterwards,
 * minus Dawn's limit-clamping warnings (see the file comment). `call` must be synchronous:
 * a promise it returns settles after fd 2 is restored.
 */
export function withoutLimitClampWarnings<T>(call: () => T): T {
  if (!canFilterDawnLog()) return call();
  const c = libc!;
  const sink = c.memfd_create('sluice-dawn-stderr', MFD_CLOEXEC);
  if (sink < 0) return call();
  const saved = c.dup(STDERR);
  if (saved < 0 || c.dup2(sink, STDERR) < 0) {
    if (saved >= 0) c.close(saved);
    c.close(sink);
    return call();
  }
  try {
    return call();
  } finally {
    c.dup2(saved, STDERR);
    c.close(saved);
    const written = readAll(sink);
    c.close(sink);
    const rest = dropLimitClampWarnings(written);
    if (rest.length > 0) writeSync(STDERR, rest);
  }
}

function readAll(fd: number): string {
  const bytes = Buffer.alloc(fstatSync(fd).size);
  let at = 0;
  while (at < bytes.length) {
    const n = readSync(fd, bytes, at, bytes.length - at, at);
    if (n === 0) break;
    at += n;
  }
  return bytes.subarray(0, at).toString('utf8');
}

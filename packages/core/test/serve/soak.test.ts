// A soak of `sluice serve` as users run it: the CLI in a child process (so that its RSS is its
// own), over 200,000 generated RM1 rows in batches of 1,024 (196 batches), loopback only. While
// 64 connections sit silent and one client reads slowly, 50 clients ask random batches for several
// rounds. Every body must equal, byte for byte, the pipeline's own batch encoded in-process in a
// first sequential pass; the server's RSS, sampled every 50 ms, must stay under 1 GiB; a new
// client must be served within 5 s while the silent connections are open; no answer may be 5xx;
// and the server's metrics say how many batches it made per distinct batch.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchToArrowStream, batchToMsgpack } from '@sluice/core/serve';
import { generateDataset, getPreset } from '@sluice/core/gen';
import { pipeline, type PlanSpec } from '@sluice/core';
import { tempDir } from '../helpers.js';
import { silent } from './sockets.js';

const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const BIN = join(ROOT, 'packages/core/bin/sluice.js');
const dir = tempDir('sluice-serve-soak-');
const spillDir = tempDir('sluice-serve-soak-spill-');
const data = join(dir, 'rm1-200k.parquet');
const planFile = join(dir, 'plan.json');
const TOKEN = 'soak';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const MSGPACK = 'application/msgpack';
const ARROW = 'application/vnd.apache.arrow.stream';
const plan: PlanSpec = { ...getPreset('rm1').defaultPlan(), batchSize: 1024 };

const CLIENTS = 50;
const PER_ROUND = 20;
const ROUNDS = 4;
const IDLE = 64;
const GiB_KB = 1024 * 1024;

const noProc = existsSync('/proc/self/status') ? null : 'no /proc (RSS is read from /proc/<pid>/status)';
if (noProc) console.warn(`skipping the serve soak: ${noProc}`);

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const want: Record<string, string[]> = { [MSGPACK]: [], [ARROW]: [] };

let child: ChildProcess | null = null;
let url = '';
let stderr = '';
const rss = { peakKb: 0, samples: 0, timer: null as NodeJS.Timeout | null };

beforeAll(async () => {
  if (noProc) return;
  await generateDataset({ preset: 'rm1', rows: 200_000, out: data, seed: 32 });
  writeFileSync(planFile, JSON.stringify(plan));
  // The first, sequential pass: the pipeline in this process, each batch encoded as the server does.
  for await (const b of pipeline(plan, { input: data })) {
    want[MSGPACK]!.push(sha(batchToMsgpack(b)));
    want[ARROW]!.push(sha(batchToArrowStream(b, plan.label ?? null)));
  }
  child = spawn(process.execPath, [BIN, 'serve', '--plan', planFile, '--input', data, '--port', '0', '--token', TOKEN, '--spill-dir', spillDir], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  url = await new Promise<string>((resolve, reject) => {
    child!.stderr!.on('data', (d: Buffer) => {
      stderr += d.toString();
      const m = /at (http:\/\/[^/\s]+)\//.exec(stderr);
      if (m) resolve(m[1]!);
    });
    child!.once('exit', (code) => reject(new Error(`sluice serve exited (${code}): ${stderr}`)));
  });
  const pid = child.pid!;
  const sample = (): void => {
    try {
      const kb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
      rss.peakKb = Math.max(rss.peakKb, kb);
      rss.samples++;
    } catch {
      // The child has exited.
    }
  };
  sample();
  rss.timer = setInterval(sample, 50);
});

afterAll(() => {
  if (rss.timer) clearInterval(rss.timer);
  if (child && child.exitCode === null) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  rmSync(spillDir, { recursive: true, force: true });
});

/** One GET on a connection of its own; the body's hash and the time taken. */
function get(target: string, accept = MSGPACK): Promise<{ status: number; hash: string; ms: number }> {
  const t0 = performance.now();
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path: target, headers: { ...AUTH, accept }, agent: false }, (res) => {
      const h = createHash('sha256');
      res.on('data', (c: Buffer) => h.update(c));
      res.on('end', () => resolve({ status: res.statusCode!, hash: h.digest('hex'), ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** Fetches batch `seq` reading 16 KiB every 50 ms (~320 KB/s); resolves to the status and the body's hash. */
function slowRead(seq: number): Promise<{ status: number; hash: string; ms: number }> {
  const u = new URL(url);
  const t0 = performance.now();
  const socket = connect(Number(u.port), u.hostname);
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    socket.on('error', reject);
    socket.once('connect', () => {
      socket.pause();
      socket.write(`GET /v1/batches/${seq} HTTP/1.1\r\nHost: soak\r\nAuthorization: Bearer ${TOKEN}\r\nAccept: ${MSGPACK}\r\nConnection: close\r\n\r\n`);
      const timer = setInterval(() => {
        const c = (socket.read(16 * 1024) ?? socket.read()) as Buffer | null;
        if (c !== null) buf = Buffer.concat([buf, c]);
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? NaN);
        if (buf.byteLength - end - 4 < length) return;
        clearInterval(timer);
        socket.destroy();
        resolve({ status: Number(head.split(' ')[1]), hash: sha(buf.subarray(end + 4, end + 4 + length)), ms: performance.now() - t0 });
      }, 50);
    });
  });
}

describe.skipIf(noProc !== null)('sluice serve soak (child process, loopback)', () => {
  it(`${CLIENTS} clients x ${ROUNDS} rounds of random batches, ${IDLE} silent connections and a slow reader: same bytes, RSS < 1 GiB, no 5xx`, async () => {
    const batches = want[MSGPACK]!.length;
    expect(batches).toBe(196);
    const statuses = new Map<number, number>();
    const count = (s: number): void => void statuses.set(s, (statuses.get(s) ?? 0) + 1);
    const latencies: number[] = [];
    const mismatches: string[] = [];

    // 64 connections that send nothing, all open before anyone else asks.
    const idle = Array.from({ length: IDLE }, () => silent(url));
    await Promise.all(idle.map((c) => c.open));
    const fresh = await get('/v1/batches/0');
    expect(idle.every((c) => !c.socket.destroyed)).toBe(true);
    count(fresh.status);
    expect(fresh.status).toBe(200);
    expect(fresh.hash).toBe(want[MSGPACK]![0]);
    expect(fresh.ms).toBeLessThan(5000);

    let seed = 20260;
    const rnd = (): number => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed / 0x80000000);
    const newClientMs: number[] = [fresh.ms];
    const slow = slowRead(batches - 1);
    const t0 = performance.now();
    for (let round = 0; round < ROUNDS; round++) {
      const probe = get('/healthz', 'application/json').then((r) => {
        count(r.status);
        newClientMs.push(r.ms);
      });
      await Promise.all(
        Array.from({ length: CLIENTS }, async (_, c) => {
          const accept = c % 5 === 4 ? ARROW : MSGPACK;
          for (let i = 0; i < PER_ROUND; i++) {
            const seq = Math.floor(rnd() * batches);
            const r = await get(`/v1/batches/${seq}`, accept);
            count(r.status);
            latencies.push(r.ms);
            if (r.status === 200 && r.hash !== want[accept]![seq]) mismatches.push(`${accept} batch ${seq}`);
          }
        }),
      );
      await probe;
    }
    const roundsMs = performance.now() - t0;
    const s = await slow;
    count(s.status);
    expect(s.status).toBe(200);
    expect(s.hash).toBe(want[MSGPACK]![batches - 1]);

    // The silent connections were answered 408 and closed at the header timeout (10 s, checked every second).
    const closed = await Promise.all(idle.map((c) => c.closed));
    expect(closed.every((c) => c.got.startsWith('HTTP/1.1 408 ') && c.ms < 15_000)).toBe(true);

    const m = await fetch(`${url}/metrics`, { headers: AUTH });
    count(m.status);
    const text = await m.text();
    const metric = (name: string): number => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
    const made = metric('sluice_batches_made_total');
    const distinct = metric('sluice_batches_distinct');

    child!.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => (child!.exitCode !== null ? r(child!.exitCode) : child!.once('exit', r)));
    clearInterval(rss.timer!);

    latencies.sort((a, b) => a - b);
    const q = (p: number): number => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!);
    console.log(
      `serve soak: ${latencies.length} batch requests in ${(roundsMs / 1000).toFixed(1)} s (p50 ${q(0.5)} ms, p99 ${q(0.99)} ms), ` +
        `new clients served in at most ${Math.round(Math.max(...newClientMs))} ms, slow reader ${Math.round(s.ms)} ms, ` +
        `peak RSS ${Math.round(rss.peakKb / 1024)} MiB over ${rss.samples} samples, made ${made} batches for ${distinct} distinct (${(made / distinct).toFixed(2)}x), ` +
        `statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
    );

    expect(mismatches).toEqual([]);
    expect(latencies.length).toBe(CLIENTS * ROUNDS * PER_ROUND);
    expect([...statuses.keys()].filter((st) => st >= 500)).toEqual([]);
    expect([...statuses.keys()]).toEqual([200]);
    expect(Math.max(...newClientMs)).toBeLessThan(5000);
    expect(rss.samples).toBeGreaterThan(50);
    expect(rss.peakKb).toBeLessThan(GiB_KB);
    expect(distinct).toBe(batches);
    expect(made / distinct).toBeLessThanOrEqual(2);
    expect(code).toBe(0);
    // The spill's files were unlinked when opened: nothing is left in its folder.
    expect(readdirSync(spillDir)).toEqual([]);
  }, 150_000);
});

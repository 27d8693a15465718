import { describe, expect, it } from 'vitest';
import { loadPlan, PlanError, typeCheckPlan, type PlanSpec } from '@sluice/core';
import { type Column } from '@sluice/core/internal';
import {
  beatRate,
  deviceBytes,
  fpgaSimBackend,
  initiationInterval,
  linksOf,
  makespan,
  parseFpgaOptions,
  PIPER_TABLE4_SECONDS,
  powerWatts,
  reproduceTable4,
  stageSeconds,
  tablesOnChip,
} from '@sluice/backend-fpga-sim';

describe('PIPER cost model arithmetic', () => {
  it('stage time is bytes / (width × clock / II) when the clock is the limit', () => {
    // 6,400 bytes = 100 beats of 64 bytes; at 200 MHz and II 1: 100 / 200e6 s; II 6 is six times that.
    expect(stageSeconds(6400, 1, 200e6)).toBeCloseTo(5e-7, 15);
    expect(stageSeconds(6400, 6, 200e6)).toBeCloseTo(3e-6, 15);
    // A partial beat still takes a whole beat.
    expect(stageSeconds(65, 1, 200e6)).toBeCloseTo(2 / 200e6, 15);
  });

  it('beat rate is the clock or the link share, whichever is slower', () => {
    expect(beatRate(1, linksOf('remote'))).toBe(11e9 / 64); // RDMA 11 GB/s < 12.8 GB/s datapath
    expect(beatRate(1, linksOf('local'))).toBe(12e9 / 64); // one HBM channel per MiniPipe
    expect(beatRate(1, linksOf('host'))).toBe(200e6); // PCIe read 14 GB/s > 12.8 GB/s
    expect(beatRate(4, linksOf('host'))).toBe(14e9 / 4 / 64); // shared PCIe
    expect(beatRate(7, linksOf('local'))).toBe(135e6); // 7 MiniPipes derate the clock
    expect(beatRate(1, linksOf('storage', 3e9))).toBe(3e9 / 64);
  });

  it('initiation intervals follow PIPER §3.4', () => {
    expect(initiationInterval('neg2zero', 'map', true)).toBe(1);
    expect(initiationInterval('vocab', 'gen', true)).toBe(2);
    expect(initiationInterval('vocab', 'gen', false)).toBe(6);
    expect(initiationInterval('vocab', 'map', true)).toBe(1);
    expect(initiationInterval('vocab', 'map', false)).toBe(6);
  });

  it('26 tables of 8K entries fit the 43 MB SRAM; 26 of 512K do not', () => {
    expect(tablesOnChip(Array(26).fill(8192))).toBe(true); // 1.7 MB
    expect(tablesOnChip(Array(26).fill(524288))).toBe(false); // 109 MB
  });

  it('device bytes narrow 32-bit int64 values and stream strings without offsets', () => {
    const small: Column = { type: 'int64', values: BigInt64Array.from([0n, 4294967295n, -5n]), valid: null };
    const big: Column = { type: 'int64', values: BigInt64Array.from([0n, 4294967296n]), valid: null };
    const str: Column = { type: 'utf8', offsets: Int32Array.from([0, 8, 16]), data: new Uint8Array(16), valid: null };
    const list: Column = {
      type: 'list',
      offsets: Int32Array.from([0, 2, 3]),
      child: { type: 'float32', values: new Float32Array(3), valid: null },
      valid: null,
    };
    expect(deviceBytes(small)).toBe(12);
    expect(deviceBytes(big)).toBe(16);
    expect(deviceBytes(str)).toBe(16);
    expect(deviceBytes(list)).toBe(2 * 4 + 3 * 4);
  });

  it('assigns features to MiniPipes longest first', () => {
    expect(makespan([3, 3, 2, 2, 2], 2)).toBe(7);
    expect(makespan([3, 3, 2, 2, 2], 1)).toBe(12);
    expect(makespan([5, 1], 7)).toBe(5);
  });

  it('power follows Table 5 (17 W static + 7/8/9 W per pipeline)', () => {
    expect(powerWatts(1, 'stateless')).toBe(24);
    expect(powerWatts(1, 'vocabOnChip')).toBe(25);
    expect(powerWatts(1, 'vocabOffChip')).toBe(26);
    expect(powerWatts(4, 'stateless')).toBe(17 + 28);
  });
});

describe('fpga-sim backend', () => {
  const spec: PlanSpec = { batchSize: 4, features: [{ name: 'd', input: 'x', kind: 'dense', ops: [{ op: 'neg2zero' }, { op: 'log', offset: 1 }] }] };
  const typed = typeCheckPlan(loadPlan(spec), new Map([['x', { kind: 'float32' }]]));

  it('rejects bad options with a PlanError naming them', () => {
    expect(() => parseFpgaOptions({ name: 'fpga-sim', miniPipes: 8 })).toThrow(/miniPipes must be an integer from 1 to 7/);
    expect(() => parseFpgaOptions({ name: 'fpga-sim', deployment: 'cloud' })).toThrow(PlanError);
    expect(() => parseFpgaOptions({ name: 'fpga-sim', speed: 1 })).toThrow(/unknown option "speed"/);
    expect(parseFpgaOptions({ name: 'fpga-sim' })).toEqual({ deployment: 'remote', miniPipes: 1 });
  });

  it('computes the reference outputs and models a hand-computed chunk', async () => {
    const values = new Float32Array(1600).map((_, i) => i - 800);
    const b = fpgaSimBackend(typed, { name: 'fpga-sim', deployment: 'local' }, new Map());
    const { columns, report } = await b.run(new Map([['x', { type: 'float32', values, valid: null }]]), (row) => ({ row }));
    const out = columns.get('d')!;
    expect(out.type).toBe('float32');
    expect((out as { values: Float32Array }).values[900]).toBe(Math.fround(Math.log(101)));
    // 6,400 bytes = 100 beats per stage at 187.5M beats/s (one 12 GB/s HBM channel): both stages take
    // 100 / 187.5e6 s, and pipelined the feature takes the slower one.
    expect(report.computeMs).toBeCloseTo((100 / 187.5e6) * 1000, 12);
    expect(report['op neg2zero ms']).toBeCloseTo((100 / 187.5e6) * 1000, 12);
    expect(report.hbmInBytes).toBe(6400);
    expect(report.energyJ).toBeCloseTo(24 * ((report.modelledMs as number) / 1000), 12);
    expect(b.totals().rows).toBe(1600);
  });
});

describe('sluice reproduce piper-table4', () => {
  it('models every Table 4 op within 25% of the paper from the run work counts', async () => {
    const r = await reproduceTable4({ rows: 3000 });
    expect(r.rows.map((x) => x.op)).toEqual(Object.keys(PIPER_TABLE4_SECONDS));
    for (const x of r.rows) {
      expect(x.paperSeconds).toBe(PIPER_TABLE4_SECONDS[x.op]);
      expect(Math.abs(x.modeledSeconds / x.paperSeconds - 1), x.op).toBeLessThan(0.25);
    }
    // Not copied: the model's own structure shows through (Logarithm = Neg2Zero, off-chip Gen = Map).
    const by = Object.fromEntries(r.rows.map((x) => [x.op, x.modeledSeconds]));
    expect(by.Logarithm).toBe(by.Neg2Zero);
    expect(by['VocabGen-512K']).toBeCloseTo(by['VocabMap-512K']!, 9);
    expect(by['VocabGen-8K']).toBeCloseTo(2 * by['VocabMap-8K']!, 9);
  });
});

/**
 * The webgpu backend: every GPU segment of every feature of a chunk runs in ONE dispatch of one
 * fused kernel. Vertical fusion: a feature's element-wise ops run in registers in one chain
 * function. Horizontal fusion (RAP §5): all features' chains share the dispatch, one `switch` arm
 * per distinct chain. Layout (RECom §4): each workgroup handles one CHUNK of one feature's column,
 * so a workgroup never diverges. All inputs of a chunk go up in one merged buffer and all results
 * come down in one; buffers are pooled per in-flight chunk.
 */
import { PlanError, SluiceError, type Backend, type BackendSpec, type TypedPlan } from '@sluice/core';
import {
  columnBytes,
  columnLength,
  int64Words,
  buildGraph,
  graphContext,
  scheduleStages,
  type GraphNode,
  type Column,
  type ColumnType,
  type ListColumn,
  type PlanState,
  type PrimitiveColumn,
  type RowLocator,
} from '@sluice/core/internal';
import { MAP_READ, USAGE, openDevice } from './device.js';
import { placeFeature, type FeaturePlacement } from './placement.js';
import type { ElemType, GpuStep } from './wgsl.js';
import { CHUNK, HEADER_WORDS, JOB_WORDS, NONE, chainFunction, shaderSource } from './wgsl.js';

/** Options of the webgpu backend in a plan's `backend` object. */
export interface WebGpuBackendOptions {
  /** Chunks in flight (each with its own pooled buffers): 2 lets chunk n+1 upload while n computes. */
  readonly inflight?: number;
}

/** Per-chunk figures added to the CostReport. */
interface GpuReport {
  /** GPU dispatches (one per GPU stage shard). */
  kernels: number;
  /** CPU stage shards run (the other kernels of the schedule). */
  cpuKernels: number;
  bytesUploaded: number;
  bytesDownloaded: number;
  gpuMs: number;
}

interface Slot {
  input: GPUBuffer | null;
  output: GPUBuffer | null;
  readback: GPUBuffer | null;
  bind: GPUBindGroup | null;
  inCap: number;
  outCap: number;
  host: Uint32Array;
}

/** A GPU node of the optimizer graph: a fused run of a feature's GPU segment. */
interface Gpu {
  readonly node: GraphNode;
  readonly from: ElemType;
  readonly to: ElemType;
  readonly steps: readonly GpuStep[];
  readonly makesNulls: boolean;
  /** Chain index in the shader. */
  readonly chain: number;
  /** Offset of the node's step table in P. */
  readonly pb: number;
}

/** Elements per row assumed for list columns when sizing stage shards before any data is seen. */
const LIST_ELEMENTS_ESTIMATE = 32;

const alignPow2 = (n: number): number => 2 ** Math.ceil(Math.log2(Math.max(n, 1024)));

/** The scalar column the GPU works on: the column itself, or a list's child. */
const elements = (c: Column): PrimitiveColumn => (c.type === 'list' ? c.child : (c as PrimitiveColumn));

/** Builds the webgpu backend for a plan (registered as `webgpu`). */
export async function createWebGpuBackend(plan: TypedPlan, options: BackendSpec, state: PlanState): Promise<Backend> {
  const known = new Set(['name', 'inflight', 'workers']);
  for (const k of Object.keys(options)) if (!known.has(k)) throw new PlanError(`backend webgpu: unknown option "${k}" (known: inflight)`);
  const inflight = options.inflight ?? 2;
  if (!Number.isInteger(inflight) || (inflight as number) < 1 || (inflight as number) > 8)
    throw new PlanError(`backend webgpu: "inflight" must be an integer in [1, 8], got ${JSON.stringify(inflight)}`);

  // ---- compile: placement, the optimizer's graph and stages, chains, parameters, one shader ----
  // Each feature's GPU segment (placement.ts) is the GPU part of its chain; the optimizer shares
  // common sub-chains, fuses each device's runs vertically, and groups nodes into stages: every
  // GPU stage is one dispatch of the fused kernel, every CPU stage one pass (RAP §5-6).
  const placements = new Map<string, FeaturePlacement>(plan.features.map((f) => [f.name, placeFeature(f)]));
  const onGpu = (f: TypedPlan['features'][number], k: number): boolean => {
    const g = placements.get(f.name)!.gpu;
    return g !== null && k >= g.start && k < g.end;
  };
  // GPU segments are not shared between features: a shared prefix would cost a second dispatch
  // for work the fused kernel does in registers.
  const graph = buildGraph(plan, (f, k) => (onGpu(f, k) ? 'gpu' : 'cpu'), { share: (d) => d !== 'gpu' });
  const chainIndex = new Map<string, number>();
  const chains: string[] = [];
  const params: number[] = [];
  const gpuOf = new Map<number, Gpu>();
  for (const node of graph.nodes) {
    if (node.device !== 'gpu') continue;
    const seg = placements.get(node.feature.name)!.gpu!;
    const steps = seg.steps.slice(node.from - seg.start, node.to - seg.start);
    const from = steps[0]!.from;
    const to = steps[steps.length - 1]!.to;
    const makesNulls = steps.some((x) => x.makesNulls);
    const key = chainFunction('CHAIN', from, to, steps, makesNulls);
    let chain = chainIndex.get(key);
    if (chain === undefined) {
      chain = chains.length;
      chainIndex.set(key, chain);
      chains.push(chainFunction(`chain${chain}`, from, to, steps, makesNulls));
    }
    // Step table: one word per step pointing at its parameters, then the parameters.
    const pb = params.length;
    params.push(...steps.map(() => 0));
    steps.forEach((x, k) => {
      params[pb + k] = params.length;
      params.push(...x.params);
    });
    gpuOf.set(node.id, { node, from, to, steps, makesNulls, chain, pb });
  }
  const gpuFeatureCount = [...placements.values()].filter((p) => p.gpu !== null).length;
  const unfusedPerChunk = [...gpuOf.values()].reduce((a, g) => a + g.steps.length, 0);

  const { device, adapterName } = await openDevice();
  let lost: string | null = null;
  void device.lost.then((info) => {
    lost = `${info.reason}: ${info.message}`;
  });

  // A stage whose merged buffers would pass the device's binding limit is split (one dispatch per shard).
  const elemBytes = (t: ColumnType): number =>
    t.kind === 'list' ? LIST_ELEMENTS_ESTIMATE * elemBytes({ kind: t.child } as ColumnType) : t.kind === 'int64' ? 8 : 4;
  const schedule = scheduleStages(graph, {
    limits: (d) => (d === 'gpu' ? { maxBytes: device.limits.maxStorageBufferBindingSize } : undefined),
    bytesOf: (n) => plan.batchSize * (elemBytes(n.type) + 4 + (n.parent === null ? elemBytes(n.feature.inputType) : elemBytes(graph.nodes[n.parent]!.type))),
  });

  let pipeline: GPUComputePipeline | null = null;
  let paramBuf: GPUBuffer | null = null;
  if (gpuOf.size > 0) {
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ code: shaderSource(chains) });
    pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
    const err = await device.popErrorScope();
    if (err) throw new SluiceError(`backend webgpu: the fused kernel did not compile: ${err.message}`);
    paramBuf = device.createBuffer({ size: Math.max(16, params.length * 4), usage: USAGE.STORAGE | USAGE.COPY_DST });
    device.queue.writeBuffer(paramBuf, 0, Uint32Array.from(params));
  }

  // ---- pooled buffers ----------------------------------------------------------------------
  const slots: Slot[] = Array.from({ length: inflight as number }, () => ({
    input: null,
    output: null,
    readback: null,
    bind: null,
    inCap: 0,
    outCap: 0,
    host: new Uint32Array(0),
  }));
  const free: Slot[] = [...slots];
  const waiting: Array<(s: Slot) => void> = [];
  let buffersCreated = 0;
  const acquire = (): Promise<Slot> => (free.length > 0 ? Promise.resolve(free.pop()!) : new Promise((r) => waiting.push(r)));
  const release = (s: Slot): void => {
    const w = waiting.shift();
    if (w) w(s);
    else free.push(s);
  };
  function ensure(s: Slot, inWords: number, outWords: number): void {
    if (inWords * 4 > s.inCap) {
      s.input?.destroy();
      s.inCap = alignPow2(inWords * 4);
      s.input = device.createBuffer({ size: s.inCap, usage: USAGE.STORAGE | USAGE.COPY_DST });
      s.host = new Uint32Array(s.inCap / 4);
      s.bind = null;
      buffersCreated++;
    }
    if (outWords * 4 > s.outCap) {
      s.output?.destroy();
      s.readback?.destroy();
      s.outCap = alignPow2(outWords * 4);
      s.output = device.createBuffer({ size: s.outCap, usage: USAGE.STORAGE | USAGE.COPY_SRC });
      s.readback = device.createBuffer({ size: s.outCap, usage: USAGE.MAP_READ | USAGE.COPY_DST });
      s.bind = null;
      buffersCreated += 2;
    }
    s.bind ??= device.createBindGroup({
      layout: pipeline!.getBindGroupLayout(0),
      entries: [
        { binding: 0, resource: { buffer: paramBuf! } },
        { binding: 1, resource: { buffer: s.input! } },
        { binding: 2, resource: { buffer: s.output! } },
      ],
    });
  }

  let chunks = 0;
  let kernelsTotal = 0;
  let cpuKernelsTotal = 0;
  let upTotal = 0;
  let downTotal = 0;
  let gpuMsTotal = 0;
  let disposed = false;

  /** Uploads one GPU shard's inputs, runs the fused kernel once, and returns the nodes' outputs by node id. */
  async function runGpu(shard: ReadonlyArray<{ g: Gpu; col: Column }>, report: GpuReport): Promise<Map<number, Column>> {
    const jobs = shard.map((j) => ({ ...j, el: elements(j.col), n: columnLength(elements(j.col)) }));
    const live = jobs.filter((j) => j.n > 0);
    const results = new Map<number, Column>();
    // Word layout of the merged input and output buffers.
    let inWords = HEADER_WORDS + JOB_WORDS * live.length;
    let outWords = 0;
    let wg = 0;
    const layout = live.map((j) => {
      const wide = j.g.from === 'int64';
      const inOff = inWords;
      inWords += wide ? 2 * j.n : j.n;
      const inValid = j.el.valid === null ? NONE : inWords;
      if (j.el.valid !== null) inWords += Math.ceil(j.n / 4);
      outWords += outWords & 1; // int64 results are read back as a BigInt64Array: 8-byte aligned
      const outOff = outWords;
      outWords += j.g.to === 'int64' ? 2 * j.n : j.n;
      const outValid = j.g.makesNulls ? outWords : NONE;
      if (outValid !== NONE) outWords += j.n;
      const wgStart = wg;
      wg += Math.ceil(j.n / CHUNK);
      return { inOff, inValid, outOff, outValid, wgStart };
    });
    if (live.length > 0) {
      if (lost !== null) throw new SluiceError(`backend webgpu: device lost (${lost})`);
      const slot = await acquire();
      try {
        ensure(slot, inWords, outWords);
        const host = slot.host;
        const bytes = new Uint8Array(host.buffer);
        const gridX = Math.min(wg, 65535);
        host[0] = live.length;
        host[1] = gridX;
        host[2] = wg;
        host[3] = 0;
        live.forEach((j, k) => {
          const l = layout[k]!;
          host.set([l.inOff, l.inValid, l.outOff, l.outValid, j.n, j.g.chain, j.g.pb, l.wgStart], HEADER_WORDS + JOB_WORDS * k);
          const el = j.el;
          if (el.type === 'int64') host.set(int64Words(el.values), l.inOff);
          else if (el.type === 'int32' || el.type === 'float32') host.set(new Uint32Array(el.values.buffer, el.values.byteOffset, el.values.length), l.inOff);
          else throw new SluiceError(`backend webgpu: feature ${j.g.node.feature.name} reached the GPU with ${el.type} elements`);
          if (el.valid !== null) bytes.set(el.valid, l.inValid * 4);
        });
        device.queue.writeBuffer(slot.input!, 0, host.buffer, 0, inWords * 4);
        const enc = device.createCommandEncoder();
        const pass = enc.beginComputePass();
        pass.setPipeline(pipeline!);
        pass.setBindGroup(0, slot.bind!);
        pass.dispatchWorkgroups(gridX, Math.ceil(wg / gridX));
        pass.end();
        enc.copyBufferToBuffer(slot.output!, 0, slot.readback!, 0, outWords * 4);
        const t0 = performance.now();
        device.queue.submit([enc.finish()]);
        try {
          await slot.readback!.mapAsync(MAP_READ, 0, outWords * 4);
        } catch (e) {
          throw new SluiceError(`backend webgpu: reading results failed${lost ? `: device lost (${lost})` : `: ${(e as Error).message}`}`, {}, { cause: e });
        }
        report.gpuMs += performance.now() - t0;
        const out = slot.readback!.getMappedRange(0, outWords * 4).slice(0);
        slot.readback!.unmap();
        report.kernels += 1;
        report.bytesUploaded += inWords * 4;
        report.bytesDownloaded += outWords * 4;
        live.forEach((j, k) => {
          const l = layout[k]!;
          const g = j.g;
          let valid: Uint8Array | null;
          if (l.outValid !== NONE) {
            const v = new Uint32Array(out, l.outValid * 4, j.n);
            const u = Uint8Array.from(v);
            valid = u.indexOf(0) === -1 ? null : u;
          } else {
            valid = g.steps.some((s) => s.op === 'fillNull') ? null : j.el.valid;
          }
          const child: PrimitiveColumn =
            g.to === 'int64'
              ? { type: 'int64', values: new BigInt64Array(out, l.outOff * 4, j.n), valid }
              : g.to === 'int32'
                ? { type: 'int32', values: new Int32Array(out, l.outOff * 4, j.n), valid }
                : { type: 'float32', values: new Float32Array(out, l.outOff * 4, j.n), valid };
          results.set(j.g.node.id, j.col.type === 'list' ? ({ type: 'list', offsets: j.col.offsets, child, valid: j.col.valid } as ListColumn) : child);
        });
      } finally {
        release(slot);
      }
    }
    // Empty columns skip the GPU; their results are empty columns of the output type.
    for (const j of jobs) {
      if (j.n > 0) continue;
      const to = j.g.to;
      const child: PrimitiveColumn =
        to === 'int64'
          ? { type: 'int64', values: new BigInt64Array(0), valid: null }
          : to === 'int32'
            ? { type: 'int32', values: new Int32Array(0), valid: null }
            : { type: 'float32', values: new Float32Array(0), valid: null };
      results.set(j.g.node.id, j.col.type === 'list' ? { type: 'list', offsets: j.col.offsets, child, valid: j.col.valid } : child);
    }
    return results;
  }

  return {
    name: 'webgpu',
    capabilities: { ops: 'all', timing: 'measured' },
    concurrency: inflight as number,
    async run(columns: ReadonlyMap<string, Column>, locate: RowLocator) {
      if (disposed) throw new SluiceError('backend webgpu: used after dispose');
      const t0 = performance.now();
      const report: GpuReport = { kernels: 0, cpuKernels: 0, bytesUploaded: 0, bytesDownloaded: 0, gpuMs: 0 };
      // Stage by stage: a GPU shard is one merged upload, one fused dispatch, one download; a CPU
      // shard runs its nodes' chains with core's kernels (hex2int, log, firstX, cross, …).
      const run = graphContext(graph, columns, state, locate);
      for (const stage of schedule.stages) {
        for (const shard of stage.shards) {
          if (stage.device === 'gpu') {
            const res = await runGpu(
              shard.map((id) => ({ g: gpuOf.get(id)!, col: run.input(id) })),
              report,
            );
            for (const [id, c] of res) run.setValue(id, c);
          } else {
            for (const id of shard) run.runNode(id);
            report.cpuKernels++;
          }
        }
      }
      const out = run.outputs();
      chunks++;
      kernelsTotal += report.kernels;
      cpuKernelsTotal += report.cpuKernels;
      upTotal += report.bytesUploaded;
      downTotal += report.bytesDownloaded;
      gpuMsTotal += report.gpuMs;
      let bytesIn = 0;
      let bytesOut = 0;
      for (const c of columns.values()) bytesIn += columnBytes(c);
      for (const c of out.values()) bytesOut += columnBytes(c);
      return { columns: out, report: { wallMs: performance.now() - t0, bytesIn, bytesOut, ...report } };
    },
    summary() {
      const per = (x: number): number => (chunks === 0 ? 0 : x / chunks);
      return {
        adapter: adapterName,
        'gpu features': gpuFeatureCount,
        'cpu-only features': plan.features.length - gpuFeatureCount,
        'fused chains in the kernel': chains.length,
        'stages (optimizer)': schedule.stages.length,
        'kernels per chunk (fused)': per(kernelsTotal),
        'cpu stage passes per chunk': per(cpuKernelsTotal),
        'kernels per chunk (one per op per feature)': unfusedPerChunk,
        'bytes uploaded per chunk': per(upTotal),
        'bytes downloaded per chunk': per(downTotal),
        'gpu ms per chunk (submit to results mapped)': per(gpuMsTotal),
        'gpu buffers created': buffersCreated,
      };
    },
    stagedPlan: () => ({ graph, schedule }),
    async dispose() {
      if (disposed) return;
      disposed = true;
      for (const s of slots) {
        s.input?.destroy();
        s.output?.destroy();
        s.readback?.destroy();
      }
      paramBuf?.destroy();
      device.destroy();
    },
  };
}

/**
 * The optimizer's graph passes (RAP §6, RECom §5):
 *
 * 1. **Common sub-chains.** Features that read the same input and start with the same op steps
 *    (same op, same parameters, on the same device) share those steps: a trie over the op chains,
 *    computed once per chunk.
 * 2. **Vertical fusion.** A run of element-wise, one-value-in-one-value-out ops that no other
 *    feature branches from becomes one node: one kernel that keeps the value in registers (GPU) or
 *    runs the chain back to back on the same chunk (CPU).
 * 3. **Horizontal fusion.** Nodes of the same kind on the same device whose inputs are ready run
 *    as one stage — one kernel launch for all of them (RAP §5: a fused kernel per stage). Finding
 *    the fewest stages is a shortest-common-supersequence problem (NP-hard in general): small
 *    graphs are searched exactly (breadth-first over the sets of finished nodes, pruned with a
 *    critical-path bound), large ones (RAP Plan 3, 1548 ops) get a greedy heuristic that picks the
 *    kind whose ready nodes carry the most remaining critical path.
 * 4. **Sharding.** A stage larger than a backend's per-kernel limit (nodes or bytes) is split into
 *    shards; each shard is one kernel launch.
 *
 * {@link executeGraph} runs a scheduled graph with core's kernels; it gives exactly the outputs of
 * `executePlan` (tested on every preset).
 */
import { isDeepStrictEqual } from 'node:util';
import { runOps, type Column, type ColumnType, type PlanOp, type PlanState, type RowLocator, type TypedFeature, type TypedPlan } from '@sluice/ops';

/** Ops that map one value to one value and keep no state: a run of them fuses vertically. */
export const FUSIBLE_OPS: ReadonlySet<string> = new Set([
  'fillNull',
  'cast',
  'neg2zero',
  'clamp',
  'log',
  'logit',
  'boxCox',
  'bucketize',
  'hex2int',
  'sigridHash',
  'modulus',
  'mapId',
]);

/** One kernel's worth of work for one value: ops [from, to) of `feature` (shared by `outputs` and by the features downstream). */
export interface GraphNode {
  readonly id: number;
  /** The node whose output this reads, or null for the raw input column. */
  readonly parent: number | null;
  /** The raw input column at the root of the chain. */
  readonly input: string;
  /** A feature whose op chain contains this node's ops (for kernels, errors and types). */
  readonly feature: TypedFeature;
  readonly from: number;
  readonly to: number;
  readonly device: string;
  /** 'chain' for a vertically fused run of element-wise ops, else the op's name. */
  readonly kind: string;
  /** Nodes that must finish first: the parent and, for a cross, the crossed features' nodes. */
  readonly deps: readonly number[];
  /** Features whose output is this node's value. */
  readonly outputs: readonly string[];
  readonly type: ColumnType;
}

export interface PlanGraph {
  readonly plan: TypedPlan;
  readonly nodes: readonly GraphNode[];
  /** Per feature: its output node, or the raw column for a feature without ops. */
  readonly outputOf: ReadonlyMap<string, { node: number } | { column: string }>;
  /** Op steps run per chunk once common sub-chains are shared. */
  readonly opsExecuted: number;
}

/** Where each op runs: a device name per (feature, op position). */
export type DeviceOf = (feature: TypedFeature, opPosition: number) => string;

interface TrieEntry {
  id: number;
  parent: number | null;
  feature: TypedFeature;
  k: number;
  device: string;
  children: number;
  outputs: string[];
  deps: number[];
}

/**
 * Builds the op graph of a typed plan: shared common sub-chains, then vertically fused nodes.
 *
 * @example
 * const g = buildGraph(typed, () => 'cpu');
 * g.nodes.length; // kernels' worth of work before horizontal fusion
 */
export function buildGraph(plan: TypedPlan, deviceOf: DeviceOf = () => 'cpu', options: { share?: (device: string) => boolean } = {}): PlanGraph {
  const entries: TrieEntry[] = [];
  // Trie children by parent, device and op (plus the owner, for ops never shared), each with its
  // params: an op is shared when its params are equal as values (isDeepStrictEqual, so -0 is not
  // 0), which a JSON key could not tell apart.
  const children = new Map<string, Array<{ readonly params: unknown; readonly id: number }>>();
  const featureEnd = new Map<string, number | null>();
  for (const f of plan.features) {
    let parent: number | null = null;
    f.ops.forEach((o, k) => {
      const device = deviceOf(f, k);
      // Stateful ops own fitted state per feature, and a cross reads features by name: never shared.
      // A device where launches cost more than recomputing (a GPU: sharing a fused prefix would
      // split one dispatch into two) can opt out of sharing.
      const own = o.def.stateful || o.op === 'cross' || options.share?.(device) === false ? `|${f.name}#${k}` : '';
      const key = `${parent === null ? `in:${f.input}` : parent}>${device}:${o.op}${own}`;
      const same = children.get(key) ?? [];
      let id = same.find((c) => isDeepStrictEqual(c.params, o.params))?.id;
      if (id === undefined) {
        const deps = parent === null ? [] : [parent];
        if (o.op === 'cross') {
          for (const name of (o.params as { inputs: readonly string[] }).inputs) {
            const end = featureEnd.get(name);
            if (end !== undefined && end !== null && !deps.includes(end)) deps.push(end);
          }
        }
        id = entries.length;
        entries.push({ id, parent, feature: f, k, device, children: 0, outputs: [], deps });
        children.set(key, [...same, { params: o.params, id }]);
        if (parent !== null) entries[parent]!.children++;
      }
      parent = id;
    });
    if (parent !== null) entries[parent]!.outputs.push(f.name);
    featureEnd.set(f.name, parent);
  }

  // Vertical fusion: an entry joins its parent's node when nothing else branches off in between.
  const nodeOfEntry = new Int32Array(entries.length);
  const draft: Array<{
    parentEntry: number | null;
    feature: TypedFeature;
    from: number;
    to: number;
    device: string;
    fused: boolean;
    deps: number[];
    last: number;
  }> = [];
  for (const e of entries) {
    const o = e.feature.ops[e.k]!;
    const fusible = FUSIBLE_OPS.has(o.op) && !o.def.stateful;
    const p = e.parent === null ? null : entries[e.parent]!;
    const pd = p === null ? null : draft[nodeOfEntry[p.id]!]!;
    if (
      p !== null &&
      pd !== null &&
      fusible &&
      pd.fused &&
      p.children === 1 &&
      p.outputs.length === 0 &&
      p.device === e.device &&
      pd.last === p.id &&
      e.deps.length === 1
    ) {
      pd.feature = e.feature;
      pd.to = e.k + 1;
      pd.last = e.id;
      nodeOfEntry[e.id] = nodeOfEntry[p.id]!;
      continue;
    }
    nodeOfEntry[e.id] = draft.length;
    draft.push({ parentEntry: e.parent, feature: e.feature, from: e.k, to: e.k + 1, device: e.device, fused: fusible, deps: e.deps, last: e.id });
  }
  const nodes: GraphNode[] = draft.map((d, id) => {
    const parent = d.parentEntry === null ? null : nodeOfEntry[d.parentEntry]!;
    const deps = [...new Set(d.deps.map((x) => nodeOfEntry[x]!))];
    return {
      id,
      parent,
      input: d.feature.input,
      feature: d.feature,
      from: d.from,
      to: d.to,
      device: d.device,
      kind: d.fused ? 'chain' : d.feature.ops[d.from]!.op,
      deps,
      outputs: entries[d.last]!.outputs,
      type: d.feature.types[d.to - 1]!,
    };
  });
  const outputOf = new Map<string, { node: number } | { column: string }>();
  for (const f of plan.features) {
    const end = featureEnd.get(f.name);
    outputOf.set(f.name, end === null || end === undefined ? { column: f.input } : { node: nodeOfEntry[end]! });
  }
  return { plan, nodes, outputOf, opsExecuted: nodes.reduce((a, n) => a + n.to - n.from, 0) };
}

/** One horizontally fused stage: nodes of one kind on one device, run as `shards.length` kernels. */
export interface Stage {
  readonly device: string;
  readonly kind: string;
  readonly nodes: readonly number[];
  /** The stage split by the backend's per-kernel limits; one kernel launch per shard. */
  readonly shards: ReadonlyArray<readonly number[]>;
}

export interface Schedule {
  readonly stages: readonly Stage[];
  /** 'exact': the fewest stages possible (searched); 'heuristic': the greedy schedule. */
  readonly search: 'exact' | 'heuristic';
  /** No schedule has fewer stages than this (the longest dependency chain, in nodes). */
  readonly lowerBound: number;
  /** Kernel launches per chunk: the shards of all stages. */
  readonly kernels: number;
}

/**
 * A graph and its stage schedule: what a backend launches per chunk (`Backend.stagedPlan`), and
 * what `sluice explain` reports.
 */
export interface StagedPlan {
  readonly graph: PlanGraph;
  readonly schedule: Schedule;
}

/** A backend's per-kernel limit: most nodes, or most bytes of input + output, in one launch. */
export interface KernelLimit {
  readonly maxNodes?: number;
  readonly maxBytes?: number;
}

export interface ScheduleOptions {
  /** Limits per device; a stage over them is sharded. */
  readonly limits?: (device: string) => KernelLimit | undefined;
  /** Bytes a node moves in one chunk (input + output), for `maxBytes`. */
  readonly bytesOf?: (node: GraphNode) => number;
  /** States kept per level of the search (default 256); the search is exact when no level holds more. */
  readonly beam?: number;
}

const keyOf = (n: GraphNode): string => `${n.device}:${n.kind}`;

/**
 * Groups a graph's nodes into horizontally fused stages: exact search for small graphs, a greedy
 * critical-path heuristic for large ones; then shards stages over the backend's limits.
 *
 * @example
 * const s = scheduleStages(buildGraph(typed));
 * s.kernels; // kernel launches per chunk
 */
export function scheduleStages(g: PlanGraph, options: ScheduleOptions = {}): Schedule {
  const n = g.nodes.length;
  const children: number[][] = g.nodes.map(() => []);
  for (const node of g.nodes) for (const d of node.deps) children[d]!.push(node.id);
  // height: nodes on the longest chain from a node to the end, itself included.
  const height = new Int32Array(n);
  for (let i = n - 1; i >= 0; i--) height[i] = 1 + Math.max(0, ...children[i]!.map((c) => height[c]!));
  const lowerBound = n === 0 ? 0 : Math.max(...height);
  const keys = g.nodes.map(keyOf);

  const readyOf = (done: Uint8Array): number[] => {
    const r: number[] = [];
    for (let i = 0; i < n; i++) if (!done[i] && g.nodes[i]!.deps.every((d) => done[d])) r.push(i);
    return r;
  };
  const greedy = (score: (ids: number[]) => number): string[] => {
    const done = new Uint8Array(n);
    const order: string[] = [];
    for (let left = n; left > 0;) {
      const byKey = new Map<string, number[]>();
      for (const i of readyOf(done)) {
        const k = keys[i]!;
        (byKey.get(k) ?? byKey.set(k, []).get(k)!).push(i);
      }
      let best = '';
      let bestScore = -1;
      for (const [k, ids] of byKey) {
        const s = score(ids);
        if (s > bestScore || (s === bestScore && k < best)) {
          best = k;
          bestScore = s;
        }
      }
      for (const i of byKey.get(best)!) {
        done[i] = 1;
        left--;
      }
      order.push(best);
    }
    return order;
  };
  const sumHeight = greedy((ids) => ids.reduce((a, i) => a + height[i]!, 0));
  const maxHeight = greedy((ids) => Math.max(...ids.map((i) => height[i]!)) * n + ids.length);
  let order = sumHeight.length <= maxHeight.length ? sumHeight : maxHeight;
  let search: Schedule['search'] = order.length === lowerBound ? 'exact' : 'heuristic';

  // Breadth-first over sets of finished nodes; each step runs every ready node of one kind
  // (running a ready node earlier never costs a stage). Pruned by depth + critical path >= best.
  // While no level is truncated the search is exact; past `beam` states a level keeps the most
  // promising ones (shortest remaining critical path, then fewest nodes left): a beam search.
  if (search === 'heuristic') {
    const beam = options.beam ?? 256;
    let frontier: Array<{ done: Uint8Array; order: string[]; crit: number; left: number }> = [
      { done: new Uint8Array(n), order: [], crit: lowerBound, left: n },
    ];
    const seen = new Set<string>();
    let truncated = false;
    let found: string[] | null = null;
    while (frontier.length > 0 && found === null) {
      const next: typeof frontier = [];
      for (const s of frontier) {
        const byKey = new Map<string, number[]>();
        for (const i of readyOf(s.done)) {
          const k = keys[i]!;
          (byKey.get(k) ?? byKey.set(k, []).get(k)!).push(i);
        }
        for (const [k, ids] of byKey) {
          const done = s.done.slice();
          for (const i of ids) done[i] = 1;
          const sig = String.fromCharCode(...done);
          if (seen.has(sig)) continue;
          seen.add(sig);
          const o = [...s.order, k];
          const rest = readyOf(done);
          if (rest.length === 0) {
            found = o;
            break;
          }
          const crit = Math.max(...rest.map((i) => height[i]!));
          if (o.length + crit >= order.length) continue;
          next.push({ done, order: o, crit, left: s.left - ids.length });
        }
        if (found !== null) break;
      }
      if (next.length > beam) {
        next.sort((a, b) => a.crit - b.crit || a.left - b.left);
        next.length = beam;
        truncated = true;
      }
      frontier = next;
    }
    if (found !== null) order = found;
    // Every branch was followed (or pruned by a bound): no schedule has fewer stages.
    if (!truncated) search = 'exact';
  }

  // Replay the order to get each stage's nodes, then shard.
  const done = new Uint8Array(n);
  const stages: Stage[] = order.map((k) => {
    const ids = readyOf(done).filter((i) => keys[i] === k);
    for (const i of ids) done[i] = 1;
    const node0 = g.nodes[ids[0]!]!;
    return { device: node0.device, kind: node0.kind, nodes: ids, shards: shard(g, ids, options.limits?.(node0.device), options.bytesOf) };
  });
  return { stages, search, lowerBound, kernels: stages.reduce((a, s) => a + s.shards.length, 0) };
}

/** First-fit split of a stage's nodes under a per-kernel limit (a node over the byte limit alone gets a shard). */
function shard(g: PlanGraph, ids: readonly number[], limit: KernelLimit | undefined, bytesOf?: (n: GraphNode) => number): number[][] {
  if (limit === undefined || (limit.maxNodes === undefined && limit.maxBytes === undefined)) return [[...ids]];
  const out: number[][] = [];
  let cur: number[] = [];
  let bytes = 0;
  for (const i of ids) {
    const b = limit.maxBytes !== undefined && bytesOf ? bytesOf(g.nodes[i]!) : 0;
    const full =
      cur.length > 0 && ((limit.maxNodes !== undefined && cur.length >= limit.maxNodes) || (limit.maxBytes !== undefined && bytes + b > limit.maxBytes));
    if (full) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(i);
    bytes += b;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Runs one node with core's kernels on its input, given the feature outputs computed so far (for cross). */
export type NodeRunner = (node: GraphNode, input: Column) => Column;

/** Input column of a node: its parent's value or the raw column. */
function nodeInput(node: GraphNode, values: ReadonlyMap<number, Column>, columns: ReadonlyMap<string, Column>): Column {
  return node.parent === null ? columns.get(node.input)! : values.get(node.parent)!;
}

/**
 * Runs a scheduled graph over one chunk: stage by stage, shard by shard. `runShard` may run a whole
 * shard elsewhere (a GPU) and return the nodes' values; by default each node runs with core's
 * kernels. Returns output columns by feature name, exactly as `executePlan` would.
 *
 * @example
 * const g = buildGraph(typed); const out = executeGraph(g, scheduleStages(g), columns);
 */
export function executeGraph(
  g: PlanGraph,
  schedule: Schedule,
  columns: ReadonlyMap<string, Column>,
  state: PlanState = new Map(),
  locate?: RowLocator,
): Map<string, Column> {
  const ctx = graphContext(g, columns, state, locate);
  for (const s of schedule.stages) for (const sh of s.shards) for (const id of sh) ctx.runNode(id);
  return ctx.outputs();
}

/** The running state of a graph over one chunk, for backends that run some shards themselves. */
export interface GraphRun {
  /** Input column of node `id` (its inputs must be done). */
  input(id: number): Column;
  /** Runs node `id` with core's kernels. */
  runNode(id: number): void;
  /** Records a value computed elsewhere (a GPU shard) for node `id`. */
  setValue(id: number, c: Column): void;
  /** Output columns by feature name (all nodes must be done). */
  outputs(): Map<string, Column>;
}

/** Starts a graph run over one chunk of input columns. */
export function graphContext(g: PlanGraph, columns: ReadonlyMap<string, Column>, state: PlanState = new Map(), locate?: RowLocator): GraphRun {
  const values = new Map<number, Column>();
  const features = new Map<string, Column>();
  const featureTypes = new Map<string, ColumnType>();
  const setValue = (id: number, c: Column): void => {
    values.set(id, c);
    for (const f of g.nodes[id]!.outputs) {
      features.set(f, c);
      featureTypes.set(f, g.plan.features.find((x) => x.name === f)!.outputType);
    }
  };
  return {
    input: (id) => nodeInput(g.nodes[id]!, values, columns),
    runNode(id) {
      const node = g.nodes[id]!;
      setValue(id, runOps(node.feature, nodeInput(node, values, columns), node.from, node.to, features, featureTypes, state, locate));
    },
    setValue,
    outputs() {
      const out = new Map<string, Column>();
      for (const f of g.plan.features) {
        const o = g.outputOf.get(f.name)!;
        out.set(f.name, 'node' in o ? values.get(o.node)! : columns.get(o.column)!);
      }
      return out;
    },
  };
}

/** Ops of a node as plan op steps. */
export const nodeOps = (n: GraphNode): readonly PlanOp[] => n.feature.ops.slice(n.from, n.to);

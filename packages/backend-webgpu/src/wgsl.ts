/**
 * The WGSL side of the backend: a library of exact 64-bit and float32-bit helpers, one function
 * per distinct fused op chain, and one entry point that runs every GPU feature of a chunk in a
 * single dispatch.
 *
 * WGSL has no 64-bit integers, so int64 values travel as vec2<u32> (lo, hi) and every op works on
 * word pairs. Float32 values travel as their bit patterns and are compared with integer ops: WGSL
 * lets implementations assume no NaN or infinity (WGSL spec §15.7, "Floating Point Evaluation"),
 * and the reference kernels give NaN a defined result, so float compares must not be left to the
 * shader compiler.
 */

/** Elements per workgroup: one workgroup handles one chunk of one feature's column (RECom §4). */
export const CHUNK = 256;
/** Threads per workgroup; each handles CHUNK / WORKGROUP elements, strided so loads coalesce. */
export const WORKGROUP = 64;
/** Words per job record in the input buffer's header. */
export const JOB_WORDS = 8;
/** Words before the job records: job count, dispatch grid width, total workgroups, spare. */
export const HEADER_WORDS = 4;
/** Offset value meaning "no validity buffer" (the column has no nulls). */
export const NONE = 0xffffffff;

const LIBRARY = /* wgsl */ `
struct Job { inOff: u32, inValid: u32, outOff: u32, outValid: u32, n: u32, chain: u32, pb: u32, wgStart: u32 }

@group(0) @binding(0) var<storage, read> P: array<u32>;
@group(0) @binding(1) var<storage, read> I: array<u32>;
@group(0) @binding(2) var<storage, read_write> O: array<u32>;

const NONE: u32 = ${NONE}u;
const CHUNK: u32 = ${CHUNK}u;

fn job(j: u32) -> Job {
  let b = ${HEADER_WORDS}u + ${JOB_WORDS}u * j;
  return Job(I[b], I[b + 1u], I[b + 2u], I[b + 3u], I[b + 4u], I[b + 5u], I[b + 6u], I[b + 7u]);
}

fn sx(w: u32) -> vec2u { return vec2u(w, select(0u, 0xffffffffu, (w >> 31u) == 1u)); }

// ---- 64-bit integer arithmetic on (lo, hi) word pairs ----
fn add64(a: vec2u, b: vec2u) -> vec2u { let lo = a.x + b.x; return vec2u(lo, a.y + b.y + select(0u, 1u, lo < a.x)); }
fn sub64(a: vec2u, b: vec2u) -> vec2u { return vec2u(a.x - b.x, a.y - b.y - select(0u, 1u, a.x < b.x)); }
fn neg64(a: vec2u) -> vec2u { return sub64(vec2u(0u, 0u), a); }
fn lt64u(a: vec2u, b: vec2u) -> bool { return a.y < b.y || (a.y == b.y && a.x < b.x); }
fn lt64s(a: vec2u, b: vec2u) -> bool { if (a.y != b.y) { return bitcast<i32>(a.y) < bitcast<i32>(b.y); } return a.x < b.x; }
// Full 64-bit product of two u32 (16-bit limbs, every partial sum fits in 32 bits).
fn mul32(a: u32, b: u32) -> vec2u {
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p00 = a0 * b0; let p01 = a0 * b1; let p10 = a1 * b0; let p11 = a1 * b1;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2u((p00 & 0xffffu) | (mid << 16u), p11 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}
fn mul64(a: vec2u, b: vec2u) -> vec2u { let p = mul32(a.x, b.x); return vec2u(p.x, p.y + a.x * b.y + a.y * b.x); }
// Shifts by a constant 0 < s < 32.
fn shlc(a: vec2u, s: u32) -> vec2u { return vec2u(a.x << s, (a.y << s) | (a.x >> (32u - s))); }
fn shrc(a: vec2u, s: u32) -> vec2u { return vec2u((a.x >> s) | (a.y << (32u - s)), a.y >> s); }
fn shl64(a: vec2u, s: u32) -> vec2u {
  if (s == 0u) { return a; }
  if (s < 32u) { return shlc(a, s); }
  return vec2u(0u, a.x << (s - 32u));
}

// folly twang_mix64 (OPS.md).
fn twang(k0: vec2u) -> vec2u {
  var k = add64(~k0, shlc(k0, 21u));
  k = k ^ shrc(k, 24u);
  k = add64(add64(k, shlc(k, 3u)), shlc(k, 8u));
  k = k ^ shrc(k, 14u);
  k = add64(add64(k, shlc(k, 2u)), shlc(k, 4u));
  k = k ^ vec2u((k.x >> 28u) | (k.y << 4u), k.y >> 28u);
  return add64(k, shlc(k, 31u));
}
// folly hash_128_to_64(u, l), kMul = 0x9ddfea08eb382d69 (OPS.md).
fn hash128(u: vec2u, l: vec2u) -> vec2u {
  let K = vec2u(0xeb382d69u, 0x9ddfea08u);
  var a = mul64(l ^ u, K);
  a = a ^ vec2u(a.y >> 15u, 0u);
  var b = mul64(u ^ a, K);
  b = b ^ vec2u(b.y >> 15u, 0u);
  return mul64(b, K);
}
// Unsigned 64-bit remainder by m in [1, 2^63).
fn urem64(x: vec2u, m: vec2u) -> vec2u {
  if (m.y == 0u && m.x <= 0xffffu) {
    // Remainders < 2^16, so each step's dividend fits in 32 bits.
    var r = x.y % m.x;
    r = ((r << 16u) | (x.x >> 16u)) % m.x;
    return vec2u(((r << 16u) | (x.x & 0xffffu)) % m.x, 0u);
  }
  if (m.y == 0u && m.x < 0x80000000u) {
    // r < 2^31, so 2r + 1 fits in 32 bits: one bit of the low word at a time.
    var r = x.y % m.x;
    for (var b = 31i; b >= 0i; b--) {
      r = (r << 1u) | ((x.x >> u32(b)) & 1u);
      if (r >= m.x) { r -= m.x; }
    }
    return vec2u(r, 0u);
  }
  var r = vec2u(0u, 0u);
  for (var b = 63i; b >= 0i; b--) {
    let w = select(x.x, x.y, b >= 32i);
    r = vec2u((r.x << 1u) | ((w >> (u32(b) & 31u)) & 1u), (r.y << 1u) | (r.x >> 31u));
    if (!lt64u(r, m)) { r = sub64(r, m); }
  }
  return r;
}
// floorMod of a signed int64 by m in [1, 2^63): result in [0, m).
fn floorMod64(x: vec2u, m: vec2u) -> vec2u {
  let neg = (x.y >> 31u) == 1u;
  let r = urem64(select(x, neg64(x), neg), m);
  if (neg && (r.x != 0u || r.y != 0u)) { return sub64(m, r); }
  return r;
}
fn sigrid(x: vec2u, salt: vec2u, m: vec2u) -> vec2u {
  if (m.x == 1u && m.y == 0u) { return vec2u(0u, 0u); }
  return floorMod64(hash128(salt, twang(x)), m);
}

// ---- float32 on bit patterns ----
fn fnan(a: u32) -> bool { return (a & 0x7fffffffu) > 0x7f800000u; }
fn fkey(a: u32) -> u32 { return select(a | 0x80000000u, ~a, (a >> 31u) == 1u); }
// a < b with IEEE semantics: false with a NaN, -0 == +0.
fn flt(a: u32, b: u32) -> bool {
  if (fnan(a) || fnan(b) || ((a | b) & 0x7fffffffu) == 0u) { return false; }
  return fkey(a) < fkey(b);
}
fn fle(a: u32, b: u32) -> bool {
  if (fnan(a) || fnan(b)) { return false; }
  return ((a | b) & 0x7fffffffu) == 0u || fkey(a) <= fkey(b);
}
// int32 bits -> float32 bits, rounding to nearest even (what a Float32Array store does).
fn i32ToF32(v: u32) -> u32 {
  if (v == 0u) { return 0u; }
  let s = v & 0x80000000u;
  let a = select(v, 0u - v, s != 0u);
  var e = 31u - countLeadingZeros(a);
  var mant: u32;
  if (e <= 23u) {
    mant = a << (23u - e);
  } else {
    let sh = e - 23u;
    mant = a >> sh;
    let rem = a & ((1u << sh) - 1u);
    let half = 1u << (sh - 1u);
    if (rem > half || (rem == half && (mant & 1u) == 1u)) { mant += 1u; }
    if (mant == 0x1000000u) { mant = mant >> 1u; e += 1u; }
  }
  return s | ((e + 127u) << 23u) | (mant & 0x7fffffu);
}
// float32 bits -> integer truncated toward zero; .z = 0 when NaN, infinite or out of range.
// wide: int64 target (else int32).
fn f32ToInt(b: u32, wide: bool) -> vec3u {
  let e = (b >> 23u) & 0xffu;
  if (e == 0xffu) { return vec3u(0u, 0u, 0u); }
  if (e < 127u) { return vec3u(0u, 0u, 1u); }
  let ex = e - 127u;
  let neg = (b >> 31u) == 1u;
  let lim = select(31u, 63u, wide);
  if (ex >= lim) {
    // Only -2^31 (int32) or -2^63 (int64) is in range at this magnitude.
    if (neg && ex == lim && (b & 0x7fffffu) == 0u) { return select(vec3u(0x80000000u, 0xffffffffu, 1u), vec3u(0u, 0x80000000u, 1u), wide); }
    return vec3u(0u, 0u, 0u);
  }
  let mant = (b & 0x7fffffu) | 0x800000u;
  var v: vec2u;
  if (ex >= 23u) { v = shl64(vec2u(mant, 0u), ex - 23u); } else { v = vec2u(mant >> (23u - ex), 0u); }
  if (neg) { v = neg64(v); }
  return vec3u(v, 1u);
}
`;

/** Element types the GPU carries (float64 has no WGSL type, utf8 stays on the CPU). */
export type ElemType = 'int32' | 'int64' | 'float32';

/** One op of a fused chain: its WGSL statements (over `x`, `v` and its parameter offset `q`). */
export interface GpuStep {
  readonly op: string;
  readonly from: ElemType;
  readonly to: ElemType;
  /** Statements; `q` is the absolute offset of this step's parameters in P. */
  readonly code: string;
  readonly params: readonly number[];
  /** Whether it can turn a valid element into a null (float to integer cast). */
  readonly makesNulls: boolean;
}

/** WGSL for one fused chain: load, every step in registers, store (vertical fusion). */
export function chainFunction(name: string, from: ElemType, to: ElemType, steps: readonly GpuStep[], makesNulls: boolean): string {
  const load =
    from === 'int64' ? 'vec2u(I[jb.inOff + 2u * i], I[jb.inOff + 2u * i + 1u])' : from === 'int32' ? 'sx(I[jb.inOff + i])' : 'vec2u(I[jb.inOff + i], 0u)';
  const body = steps.map((s, k) => `  { let q = P[jb.pb + ${k}u];\n${s.code}\n  }`).join('\n');
  const store = to === 'int64' ? '  O[jb.outOff + 2u * i] = x.x;\n  O[jb.outOff + 2u * i + 1u] = x.y;' : '  O[jb.outOff + i] = x.x;';
  return `fn ${name}(jb: Job, i: u32) {
  var x = ${load};
  var v = jb.inValid == NONE || ((I[jb.inValid + (i >> 2u)] >> ((i & 3u) * 8u)) & 0xffu) != 0u;
${body}
  if (!v) { x = vec2u(0u, 0u); }
${store}
${makesNulls ? '  O[jb.outValid + i] = select(0u, 1u, v);' : ''}
}
`;
}

/** The whole shader: library, chain functions, and the entry point that routes a workgroup to its job. */
export function shaderSource(chains: readonly string[]): string {
  const cases = chains.map((_, k) => `    case ${k}u: { chain${k}(jb, i); }`).join('\n');
  return `${LIBRARY}
${chains.join('\n')}
@compute @workgroup_size(${WORKGROUP})
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let w = wid.x + wid.y * I[1];
  if (w >= I[2]) { return; }
  // The job whose workgroup range holds w: the last one starting at or before it.
  var lo = 0u;
  var hi = I[0];
  while (hi - lo > 1u) {
    let mid = (lo + hi) >> 1u;
    if (I[${HEADER_WORDS}u + ${JOB_WORDS}u * mid + 7u] <= w) { lo = mid; } else { hi = mid; }
  }
  let jb = job(lo);
  let base = (w - jb.wgStart) * CHUNK;
  for (var e = lid; e < CHUNK; e += ${WORKGROUP}u) {
    let i = base + e;
    if (i >= jb.n) { break; }
    switch jb.chain {
${cases}
      default: {}
    }
  }
}
`;
}

// Per-agent changed and unique element counts of one window: all that tensor-local RAM+'s λ reads of a
// tensor (SPEC.md "Tensor-local RAM+"), under the statistics kernel's rules (stats.wgsl count_pair):
// changed means |tau| > epsilon, unique means changed by that agent alone, and an element whose bits
// differ somewhere and hold NaN or ±Inf is counted as nonFinite, never classified.
// No per-element atomics: each invocation adds its elements' agent sets into 8-bit fields, 4 agents
// per u32 of plain values (not private arrays, which SwiftShader keeps in memory), and adds the
// fields to the global counters once at its end. NaN and ±Inf are told on bit patterns, by one
// exponent carry per stored word, and the bits that differ are looked at only where one is found.
//
// Counter layout (src/engine/kernels/overlap_count.ts mirrors it):
//   t                  changed[t]
//   AGENTS + t         unique[t]
//   NONFINITE          nonFinite
//   NONFINITE + 1 + m  nonFiniteModels[m] (0 = base)

// Element pairs per invocation: each lane adds at most 1 per pair to a field, two lanes 2, so 127
// pairs fill an 8-bit field to at most 254 (OVERLAP_COUNT_ITEMS in src/engine/kernels/overlap_count.ts).
const PAIRS: u32 = 127u;
const EXPONENT: u32 = 0x7f800000u;
// Times a 4-bit mask, moves its bit i to bit 8i (the four shifted copies do not overlap, so no carries).
const SPREAD: u32 = 0x204081u;
const FIELD_ONES: u32 = 0x01010101u;

override NONFINITE: u32 = 2u * AGENTS;

@group(0) @binding(2) var<storage, read_write> counters: array<atomic<u32>>;

// One 8-bit field per agent: agent t in byte t % 4 of component (t / 4) % 4 of lo (t < 16) or hi.
struct Fields {
  lo: vec4<u32>,
  hi: vec4<u32>,
}

// Agents 4k..4k+3 of mask m in the four bytes of component k, for k = 0..3 (agents 0..15 of m).
fn spread16(m: u32) -> vec4<u32> {
  let nibbles = (vec4<u32>(m) >> vec4<u32>(0u, 4u, 8u, 12u)) & vec4<u32>(0xfu);
  return (nibbles * vec4<u32>(SPREAD)) & vec4<u32>(FIELD_ONES);
}

// Adds the agents of the two lanes' masks to the fields; with 4 agents or fewer only lo.x changes.
fn add_masks(f: Fields, m: vec2<u32>) -> Fields {
  if (AGENTS <= 4u) {
    let s = (m * vec2<u32>(SPREAD)) & vec2<u32>(FIELD_ONES);
    return Fields(vec4<u32>(f.lo.x + s.x + s.y, f.lo.yzw), f.hi);
  }
  var hi = f.hi;
  if (AGENTS > 16u) {
    hi += spread16(m.x >> 16u) + spread16(m.y >> 16u);
  }
  return Fields(f.lo + spread16(m.x) + spread16(m.y), hi);
}

fn field(f: Fields, t: u32) -> u32 {
  let word = select(f.lo, f.hi, t >= 16u)[(t >> 2u) & 3u];
  return (word >> (8u * (t & 3u))) & 0xffu;
}

fn special(bits: vec2<u32>) -> vec2<bool> {
  return (bits & vec2<u32>(EXPONENT)) == vec2<u32>(EXPONENT);
}

// Rare path, for the lanes of pair p where some model holds NaN or ±Inf: those whose bits differ
// somewhere are non-finite, counted in all and per model holding NaN or ±Inf; the rest are unchanged.
fn count_non_finite(p: u32, any_special: vec2<bool>) {
  let base_bits = load_pair_bits(0u, p);
  var differs = vec2<bool>(false);
  for (var t = 1u; t <= AGENTS; t++) {
    differs |= load_pair_bits(t, p) != base_bits;
  }
  let non_finite = any_special & differs;
  if (!any(non_finite)) {
    return;
  }
  atomicAdd(&counters[NONFINITE], countOneBits(select(0u, 1u, non_finite.x) | select(0u, 2u, non_finite.y)));
  for (var m = 0u; m <= AGENTS; m++) {
    let hit = non_finite & special(load_pair_bits(m, p));
    let n = countOneBits(select(0u, 1u, hit.x) | select(0u, 2u, hit.y));
    if (n != 0u) {
      atomicAdd(&counters[NONFINITE + 1u + m], n);
    }
  }
}

// One model's f32 bits of elements 2p, 2p+1, and whether each holds NaN or ±Inf in bit 15 (element
// 2p) and bit 31 (element 2p+1) of `carry`: an exponent field of all ones carries into the bit above
// it when one is added at its lowest bit. A 16-bit input does both elements on its stored word at once.
struct ModelPair {
  bits: vec2<u32>,
  carry: u32,
}

fn model_pair(slot: u32, p: u32) -> ModelPair {
  if (IN_DTYPE == DTYPE_F32) {
    let bits = load_pair_bits(slot, p);
    let c = (bits & vec2<u32>(EXPONENT)) + vec2<u32>(0x00800000u);
    return ModelPair(bits, (c.x >> 16u) | c.y);
  }
  let word = inputs[slot * params.slot_words + p];
  if (IN_DTYPE == DTYPE_BF16) {
    return ModelPair(vec2<u32>(word << 16u, word & 0xffff0000u), (word & 0x7f807f80u) + 0x00800080u);
  }
  let bits = vec2<u32>(decode16(IN_DTYPE, word & 0xffffu), decode16(IN_DTYPE, word >> 16u));
  return ModelPair(bits, (word & 0x7c007c00u) + 0x04000400u);
}

// What changed_sets has of a pair so far: the models' exponent carries, the agents that changed each lane.
struct Scan {
  carry: u32,
  changed: vec2<u32>,
}

// Adds agent t: its exponent carries, and its bit in the lanes where |tau| > epsilon.
fn add_agent(s: Scan, t: u32, p: u32, base: vec2<f32>) -> Scan {
  let a = model_pair(t + 1u, p);
  let x = bitcast<vec2<f32>>(a.bits) - base;
  let bit = select(vec2<u32>(0u), vec2<u32>(1u << t), abs(x) > vec2<f32>(params.epsilon));
  return Scan(s.carry | a.carry, s.changed | bit);
}

// Agents written out in changed_sets: SwiftShader does not unroll a loop of constant trip count, and at
// N = 3 the loop cost about a third of this kernel's time.
const UNROLLED: u32 = 8u;

// The set of agents that changed each of elements 2p, 2p+1 where `valid` says they lie in the window;
// 0 where any model holds NaN or ±Inf (unchanged if all hold the same bits, else non-finite, which the
// rare path tells apart and counts).
fn changed_sets(p: u32, valid: vec2<bool>) -> vec2<u32> {
  let b = model_pair(0u, p);
  let base = bitcast<vec2<f32>>(b.bits);
  var s = Scan(b.carry, vec2<u32>(0u));
  if (AGENTS <= UNROLLED) {
    s = add_agent(s, 0u, p, base);
    if (AGENTS > 1u) {
      s = add_agent(s, 1u, p, base);
    }
    if (AGENTS > 2u) {
      s = add_agent(s, 2u, p, base);
    }
    if (AGENTS > 3u) {
      s = add_agent(s, 3u, p, base);
    }
    if (AGENTS > 4u) {
      s = add_agent(s, 4u, p, base);
    }
    if (AGENTS > 5u) {
      s = add_agent(s, 5u, p, base);
    }
    if (AGENTS > 6u) {
      s = add_agent(s, 6u, p, base);
    }
    if (AGENTS > 7u) {
      s = add_agent(s, 7u, p, base);
    }
  } else {
    for (var t = 0u; t < AGENTS; t++) {
      s = add_agent(s, t, p, base);
    }
  }
  let any_special = valid & ((vec2<u32>(s.carry) & vec2<u32>(0x8000u, 0x80000000u)) != vec2<u32>(0u));
  if (any(any_special)) {
    count_non_finite(p, any_special);
  }
  return select(vec2<u32>(0u), s.changed, valid & !any_special);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  let first = group * WORKGROUP * PAIRS + lid;
  // Pairs past the window's end read the last pair (in bounds) and count nothing.
  let last = (params.count - 1u) >> 1u;
  var changed = Fields(vec4<u32>(0u), vec4<u32>(0u));
  var unique = Fields(vec4<u32>(0u), vec4<u32>(0u));
  for (var j = 0u; j < PAIRS; j++) {
    let p = first + j * WORKGROUP;
    let sets = changed_sets(min(p, last), vec2<u32>(2u * p, 2u * p + 1u) < vec2<u32>(params.count));
    changed = add_masks(changed, sets);
    // A set of one agent: no bit left once its lowest is cleared.
    unique = add_masks(unique, select(vec2<u32>(0u), sets, (sets & (sets - vec2<u32>(1u))) == vec2<u32>(0u)));
  }
  for (var t = 0u; t < AGENTS; t++) {
    let c = field(changed, t);
    if (c != 0u) {
      atomicAdd(&counters[t], c);
    }
    let u = field(unique, t);
    if (u != 0u) {
      atomicAdd(&counters[AGENTS + t], u);
    }
  }
}

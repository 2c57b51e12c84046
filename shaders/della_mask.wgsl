// DELLA's MagPrune (mergekit `della_magprune`) over a window of whole slabs: one workgroup per agent and
// rank group (a row of a 2-D tensor, the whole of a 1-D one, a column of dimension 1 beyond). It sorts
// the group's (|tau| bits, position) pairs ascending by a bitonic sort in its region of `della_sort`
// (padded to a power of two with pairs that sort last), so that sorted position r holds rank r, equal
// magnitudes ordered by position; then draws each entry with DARE's hash against the keep bound of its
// rank, low + floor(rank * span / (length - 1)), worked out exactly in 64-bit integer arithmetic, and
// writes the factor the merge multiplies its tau by (0 where dropped) to `della_factors`, agent-major.
// CPU reference: dellaMask / dellaAgentTaus in src/methods/della.ts.

// Per agent: 1/p of each kept entry (the DELLA paper), `factor` for every kept entry (mergekit's l1
// rule, none, or 1 to mark kept entries for the norms pass), or every entry kept with factor 1
// (density >= 1).
const MODE_INVERSE_P: u32 = 0u;
const MODE_FACTOR: u32 = 1u;
const MODE_KEEP_ALL: u32 = 2u;
const UNIT: u32 = 16777216u;
const NO_PAIR: vec2<u32> = vec2<u32>(0xffffffffu, 0xffffffffu);

struct DellaAgent {
  low: u32,
  span: u32,
  mode: u32,
  factor: f32,
}

// A tensor's rank groups (src/methods/della.ts dellaGroups) and each agent's keep bounds.
struct DellaSpec {
  length: u32,
  inner: u32,
  pow2: u32,   // the smallest power of two >= length: each group's region of della_sort
  pad: u32,
  agents: array<DellaAgent>,
}

@group(0) @binding(2) var<storage, read_write> della_sort: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read> della: DellaSpec;
@group(0) @binding(5) var<storage, read_write> della_factors: array<u32>;

// The 64-bit product of a and b as (low word, high word).
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>((p00 & 0xffffu) | (mid << 16u), a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u));
}

fn at_most(a: vec2<u32>, b: vec2<u32>) -> bool {
  return a.y < b.y || (a.y == b.y && a.x <= b.x);
}

// floor(rank * span / den) exactly (rank * span < 2^53): an f32 guess stepped to the exact floor.
fn floor_ratio(rank: u32, span: u32, den: u32) -> u32 {
  let n = mul_wide(rank, span);
  var q = u32(f32(rank) * f32(span) / f32(den));
  for (var i = 0u; i < 64u; i++) {
    if (!at_most(mul_wide(q + 1u, den), n)) {
      break;
    }
    q += 1u;
  }
  for (var i = 0u; i < 64u; i++) {
    if (at_most(mul_wide(q, den), n)) {
      break;
    }
    q -= 1u;
  }
  return q;
}

// The keep bound of rank `rank` (dellaKeepBelow): a group of one takes the middle, rank_norm 1/2.
fn keep_below(a: DellaAgent, rank: u32, length: u32) -> u32 {
  var q = 0u;
  if (length > 1u) {
    q = floor_ratio(rank, a.span, length - 1u);
  } else {
    q = a.span / 2u;
  }
  return min(UNIT, a.low + q);
}

// Sorts before: the smaller |tau| bits, then the lower position.
fn before(a: vec2<u32>, b: vec2<u32>) -> bool {
  return a.x < b.x || (a.x == b.x && a.y < b.y);
}

@compute @workgroup_size(WORKGROUP)
fn main(
  @builtin(workgroup_id) wid: vec3u,
  @builtin(num_workgroups) groups: vec3u,
  @builtin(local_invocation_index) lid: u32,
) {
  let length = della.length;
  let inner = della.inner;
  let pow2 = della.pow2;
  let per_agent = params.count / length;
  let index = wid.y * groups.x + wid.x;
  if (index >= AGENTS * per_agent) {
    return;
  }
  let t = index / per_agent;
  let g = index % per_agent;
  // Position j of group g is element first + j * inner of the window.
  let first = (g / inner) * length * inner + g % inner;
  let a = della.agents[t];
  if (a.mode == MODE_KEEP_ALL) {
    for (var j = lid; j < length; j += WORKGROUP) {
      della_factors[t * params.count + first + j * inner] = bitcast<u32>(1.0);
    }
    return;
  }
  let region = index * pow2;
  for (var j = lid; j < pow2; j += WORKGROUP) {
    var pair = NO_PAIR;
    if (j < length) {
      pair = vec2<u32>(tau_key(t + 1u, first + j * inner), j);
    }
    della_sort[region + j] = pair;
  }
  storageBarrier();
  for (var k = 2u; k <= pow2; k <<= 1u) {
    for (var step = k >> 1u; step > 0u; step >>= 1u) {
      for (var i = lid; i < pow2; i += WORKGROUP) {
        let l = i ^ step;
        if (l > i) {
          let x = della_sort[region + i];
          let y = della_sort[region + l];
          let ascending = (i & k) == 0u;
          if (select(before(x, y), before(y, x), ascending)) {
            della_sort[region + i] = y;
            della_sort[region + l] = x;
          }
        }
      }
      storageBarrier();
    }
  }
  for (var rank = lid; rank < length; rank += WORKGROUP) {
    let e = first + della_sort[region + rank].y * inner;
    let bound = keep_below(a, rank, length);
    let lo = params.start_lo + e;
    let hi = params.start_hi + select(0u, 1u, lo < e);
    let kept = (dare_hash(params.seed, params.name_hash, t, lo, hi) >> 8u) < bound;
    var factor = a.factor;
    if (a.mode == MODE_INVERSE_P) {
      factor = exact_quotient(vec2<f32>(f32(UNIT)), vec2<f32>(f32(bound))).x;
    }
    della_factors[t * params.count + e] = bitcast<u32>(select(0.0, factor, kept));
  }
}

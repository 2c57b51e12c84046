// One pass of the TIES top-k radix select: per agent, a histogram of one digit of the |tau| bit
// patterns, over the elements whose higher digits equal the prefix chosen so far. Zeros are never
// counted (keeping a zero changes nothing), so a threshold of 0 means "keep every non-zero entry".
// Bins are counted straight into storage: a 2^16-bin row does not fit workgroup memory, and two wide
// digits settle the select in two passes where three narrow ones took three.
// The first digit also keeps, per bin, how many of its keys have lower bits that are not all zero
// ("odd" keys) and their least and greatest lower bits: where a bin holds one key the select is
// settled without a second pass over the tensor (TopKSelect reads the bin as topk_hist.ts says).
// |tau| of two nearby bf16 values has no bits below the digit, so odd keys are rare there, and only
// they take branches: on SwiftShader a branch around each key's atomics cost more than the atomics,
// so every key adds to its bin's count unconditionally (a miss adds 0, spread over the row).

// Element pairs per invocation: 8 elements, 2048 per workgroup.
const PAIRS: u32 = 4u;
const MAX_BINS: u32 = 65536u;
// Words per bin: the count, the count of odd keys, then their least lower bits stored as
// 2^shift - low and their greatest as low + 1, both raised with atomicMax from a cleared 0.
const SLOTS: u32 = 4u;

@group(0) @binding(2) var<storage, read_write> histogram: array<atomic<u32>>;

// Raises a bound only when it moves: in a bin of equal keys it soon holds, so most keys only load it.
fn raise(i: u32, v: u32) {
  if (atomicLoad(&histogram[i]) < v) {
    atomicMax(&histogram[i], v);
  }
}

// Counts an odd key on the first digit: `bin` is its bin's first word, `low` its bits below the digit.
fn count_odd(bin: u32, low: u32) {
  atomicAdd(&histogram[bin + 1u], 1u);
  raise(bin + 2u, (1u << params.digit_shift) - low);
  raise(bin + 3u, low + 1u);
}

// The base's bits are loaded once per pair and both lanes handled without a loop over them: on
// SwiftShader the per-agent base reload and the dynamically indexed lane made the pass ~1.5x slower.
@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  let high = params.digit_shift + params.digit_bits;
  let first = group * WORKGROUP * PAIRS + lid;
  for (var j = 0u; j < PAIRS; j++) {
    let p = first + j * WORKGROUP;
    if (2u * p >= params.count) {
      break;
    }
    let valid = vec2<bool>(true, 2u * p + 1u < params.count);
    let base = load_pair_bits(0u, p);
    for (var t = 0u; t < AGENTS; t++) {
      // Fields read one by one: bound to a name, SwiftShader loads the whole ten-word struct.
      if (agents[t].searching == 0u) {
        continue;
      }
      let keys = pair_keys(load_pair_bits(t + 1u, p), base);
      let prefix = agents[t].prefix >> high;
      let hit = valid & (keys != vec2<u32>(0u)) & ((keys >> vec2<u32>(high)) == vec2<u32>(prefix));
      let digit = (keys >> vec2<u32>(params.digit_shift)) & vec2<u32>((1u << params.digit_bits) - 1u);
      let bin = (vec2<u32>(t * MAX_BINS) + select(vec2<u32>(p & (MAX_BINS - 1u)), digit, hit)) * SLOTS;
      atomicAdd(&histogram[bin.x], select(0u, 1u, hit.x));
      atomicAdd(&histogram[bin.y], select(0u, 1u, hit.y));
      if (params.digit_shift != 0u) {
        let low = keys & vec2<u32>((1u << params.digit_shift) - 1u);
        let odd = hit & (low != vec2<u32>(0u));
        if (any(odd)) {
          if (odd.x) {
            count_odd(bin.x, low.x);
          }
          if (odd.y) {
            count_odd(bin.y, low.y);
          }
        }
      }
    }
  }
}

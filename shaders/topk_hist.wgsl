// One pass of the TIES top-k radix select: per agent, a histogram of one digit of the |tau| bit
// patterns, over the elements whose higher digits equal the prefix chosen so far. Zeros are never
// counted (keeping a zero changes nothing), so a threshold of 0 means "keep every non-zero entry".
// Bins are counted straight into storage: a 2^16-bin row does not fit workgroup memory, and two wide
// digits settle the select in two passes where three narrow ones took three.
// The first digit also keeps, per bin, the least and greatest of its keys' lower bits: where they are
// equal the bin holds one key, and the select is settled without a second pass over the tensor.

// Element pairs per invocation: 8 elements, 2048 per workgroup.
const PAIRS: u32 = 4u;
const MAX_BINS: u32 = 65536u;
// Words per bin: the count, then the least lower bits stored as 2^shift - low and the greatest as
// low + 1, both raised with atomicMax from a cleared 0 (= no key yet).
const SLOTS: u32 = 3u;

@group(0) @binding(2) var<storage, read_write> histogram: array<atomic<u32>>;

// Raises a bound only when it moves: in a bin of equal keys it soon holds, so most keys only load it.
fn raise(i: u32, v: u32) {
  if (atomicLoad(&histogram[i]) < v) {
    atomicMax(&histogram[i], v);
  }
}

// Counts one key of agent t: its bin's count and, on the first digit, the bin's bounds.
fn count_key(t: u32, key: u32) {
  let bin = (t * MAX_BINS + ((key >> params.digit_shift) & ((1u << params.digit_bits) - 1u))) * SLOTS;
  atomicAdd(&histogram[bin], 1u);
  if (params.digit_shift != 0u) {
    let span = 1u << params.digit_shift;
    let low = key & (span - 1u);
    raise(bin + 1u, span - low);
    raise(bin + 2u, low + 1u);
  }
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
      // Fields read one by one: SwiftShader loads a whole struct bound to a name (the pass ran ~1.5x
      // slower so).
      if (agents[t].searching == 0u) {
        continue;
      }
      let keys = pair_keys(load_pair_bits(t + 1u, p), base);
      let prefix = agents[t].prefix >> high;
      let hit = valid & (keys != vec2<u32>(0u)) & ((keys >> vec2<u32>(high)) == vec2<u32>(prefix));
      if (hit.x) {
        count_key(t, keys.x);
      }
      if (hit.y) {
        count_key(t, keys.y);
      }
    }
  }
}

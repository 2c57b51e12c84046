// One pass of the TIES top-k radix select: per agent, a histogram of one digit of the |tau| bit
// patterns, over the elements whose higher digits equal the prefix chosen so far. Zeros are never
// counted (keeping a zero changes nothing), so a threshold of 0 means "keep every non-zero entry".
// Bins are counted straight into storage: a 2^16-bin row does not fit workgroup memory, and two wide
// digits settle the select in two passes where three narrow ones took three.

// Element pairs per invocation: 8 elements, 2048 per workgroup.
const PAIRS: u32 = 4u;
const MAX_BINS: u32 = 65536u;

@group(0) @binding(2) var<storage, read_write> histogram: array<atomic<u32>>;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  let mask = (1u << params.digit_bits) - 1u;
  let high = params.digit_shift + params.digit_bits;
  let first = group * WORKGROUP * PAIRS + lid;
  for (var j = 0u; j < PAIRS; j++) {
    let p = first + j * WORKGROUP;
    if (2u * p >= params.count) {
      break;
    }
    let lanes = min(params.count - 2u * p, 2u);
    for (var t = 0u; t < AGENTS; t++) {
      let a = agents[t];
      if (a.searching == 0u) {
        continue;
      }
      let keys = tau_keys(t + 1u, p);
      for (var lane = 0u; lane < lanes; lane++) {
        let key = keys[lane];
        if (key != 0u && (key >> high) == (a.prefix >> high)) {
          atomicAdd(&histogram[t * MAX_BINS + ((key >> params.digit_shift) & mask)], 1u);
        }
      }
    }
  }
}

// One pass of the TIES top-k radix select: per agent, a histogram of one digit of the |tau| bit
// patterns, over the elements whose higher digits equal the prefix chosen so far. Zeros are never
// counted (keeping a zero changes nothing), so a threshold of 0 means "keep every non-zero entry".

// Element pairs per invocation: 8 elements, 2048 per workgroup.
const PAIRS: u32 = 4u;
const MAX_BINS: u32 = 2048u;

@group(0) @binding(2) var<storage, read_write> histogram: array<atomic<u32>>;

var<workgroup> local: array<atomic<u32>, MAX_BINS>;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  let bins = 1u << params.digit_bits;
  let high = params.digit_shift + params.digit_bits;
  let first = group * WORKGROUP * PAIRS + lid;
  for (var t = 0u; t < AGENTS; t++) {
    for (var i = lid; i < bins; i += WORKGROUP) {
      atomicStore(&local[i], 0u);
    }
    workgroupBarrier();
    let a = agents[t];
    if (a.searching != 0u) {
      for (var j = 0u; j < PAIRS; j++) {
        let p = first + j * WORKGROUP;
        if (2u * p < params.count) {
          let keys = tau_keys(t + 1u, p);
          let lanes = min(params.count - 2u * p, 2u);
          for (var lane = 0u; lane < lanes; lane++) {
            let key = keys[lane];
            if (key != 0u && (key >> high) == (a.prefix >> high)) {
              atomicAdd(&local[(key >> params.digit_shift) & (bins - 1u)], 1u);
            }
          }
        }
      }
    }
    workgroupBarrier();
    for (var i = lid; i < bins; i += WORKGROUP) {
      let v = atomicLoad(&local[i]);
      if (v != 0u) {
        atomicAdd(&histogram[t * MAX_BINS + i], v);
      }
    }
    workgroupBarrier();
  }
}

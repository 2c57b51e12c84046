// TIES top-k select, step 1 where a sample has guessed each threshold's key (src/engine/topk-select.ts):
// per row (a top-k of agent row mod AGENTS), the keys above the guessed key and the keys equal to it.
// Where those make the row's k with the guess's own run, the threshold and its ties are exact
// (topk-bracket.ts); else the host falls back to the radix select (topk_hist). Zero keys are never
// counted as above (keeping a zero changes nothing); the keys are those of pair_keys in inputs.wgsl.
//
// On SwiftShader a pass costs what its loads and per-key work cost, so this one reads 16-bit inputs
// a vec4 (eight keys) at a time, keeps its counts in 8-bit fields of plain values (row i of the
// dispatch in bits 8i..8i+7; an invocation sees 64 keys per row) and adds them once per row per
// workgroup: no atomic per key, which is what the radix histogram pays. A dispatch counts up to four
// rows, FIRST_ROW on, loading the base once for all of them. Input slots start on 16-byte boundaries
// (slotBytesFor in plumbing.ts).
//
// bracket (host-written): per row its guessed key (NO_KEY for a row not counted). histogram
// (host-cleared): per row COUNTS words: above, equal.

override FIRST_ROW: u32 = 0u;
// Rows of this dispatch, 1 to 4.
override ROWS: u32 = 1u;

// vec4 words per invocation: 64 keys, 16384 per workgroup (COUNT_QUADS in topk_count.ts).
const QUADS: u32 = 8u;
const COUNTS: u32 = 2u;

@group(0) @binding(1) var<storage, read> inputs: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> histogram: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read> bracket: array<u32>;

var<workgroup> local: array<atomic<u32>, 4u * COUNTS>;

// f32 bits of the low (`high` false) or high 16-bit halves of four input words.
fn halves(words: vec4<u32>, high: bool) -> vec4<u32> {
  let h = select(words & vec4<u32>(0xffffu), words >> vec4<u32>(16u), high);
  if (IN_DTYPE == DTYPE_BF16) {
    return h << vec4<u32>(16u);
  }
  return vec4<u32>(f16_to_f32_bits(h.x), f16_to_f32_bits(h.y), f16_to_f32_bits(h.z), f16_to_f32_bits(h.w));
}

// pair_keys (inputs.wgsl) of four elements: |a - b| bits, 0 where a and b hold the same bits.
fn keys4(a: vec4<u32>, b: vec4<u32>, valid: vec4<bool>) -> vec4<u32> {
  let x = bitcast<vec4<f32>>(a) - bitcast<vec4<f32>>(b);
  return select(vec4<u32>(0u), bitcast<vec4<u32>>(x) & vec4<u32>(0x7fffffffu), valid & (a != b));
}

// Adds a lane-packed counter's 8-bit fields (row i in bits 8i..8i+7) to counter `c` of each row.
fn flush(c: u32, packed: vec4<u32>) {
  let sum = packed.x + packed.y + packed.z + packed.w;
  for (var i = 0u; i < ROWS; i++) {
    let n = (sum >> (8u * i)) & 0xffu;
    if (n != 0u) {
      atomicAdd(&local[i * COUNTS + c], n);
    }
  }
}

struct Counts {
  above: vec4<u32>,
  equal: vec4<u32>,
}

fn count_keys(c: Counts, key: vec4<u32>, keys: vec4<u32>, bit: vec4<u32>) -> Counts {
  let zero = vec4<u32>(0u);
  return Counts(c.above + select(zero, bit, keys > key), c.equal + select(zero, bit, keys == key));
}

// Row FIRST_ROW + i's keys of the eight elements of vec4 word q, counted in field i.
fn count_row(
  c: Counts,
  i: u32,
  q: u32,
  slot: u32,
  base_low: vec4<u32>,
  base_high: vec4<u32>,
  valid_low: vec4<bool>,
  valid_high: vec4<bool>,
) -> Counts {
  let r = FIRST_ROW + i;
  let words = inputs[(r % AGENTS + 1u) * slot + q];
  let bit = vec4<u32>(1u << (8u * i));
  let key = vec4<u32>(bracket[r]);
  let low = count_keys(c, key, keys4(halves(words, false), base_low, valid_low), bit);
  return count_keys(low, key, keys4(halves(words, true), base_high, valid_high), bit);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  if (lid < ROWS * COUNTS) {
    atomicStore(&local[lid], 0u);
  }
  workgroupBarrier();
  let zero = vec4<u32>(0u);
  var c = Counts(zero, zero);
  let slot = params.slot_words / 4u;
  let first = group * WORKGROUP * QUADS + lid;
  for (var j = 0u; j < QUADS; j++) {
    let q = first + j * WORKGROUP;
    if (8u * q >= params.count) {
      break;
    }
    // Element 8q + 2k (low half of word k) and 8q + 2k + 1 (high half).
    let even = vec4<u32>(8u * q) + vec4<u32>(0u, 2u, 4u, 6u);
    let valid_low = even < vec4<u32>(params.count);
    let valid_high = even + vec4<u32>(1u) < vec4<u32>(params.count);
    let base = inputs[q];
    let base_low = halves(base, false);
    let base_high = halves(base, true);
    // Rows written out: SwiftShader does not unroll a loop of a constant count, and unrolled, each
    // row's field and slot are constants.
    c = count_row(c, 0u, q, slot, base_low, base_high, valid_low, valid_high);
    if (ROWS > 1u) {
      c = count_row(c, 1u, q, slot, base_low, base_high, valid_low, valid_high);
    }
    if (ROWS > 2u) {
      c = count_row(c, 2u, q, slot, base_low, base_high, valid_low, valid_high);
    }
    if (ROWS > 3u) {
      c = count_row(c, 3u, q, slot, base_low, base_high, valid_low, valid_high);
    }
  }
  flush(0u, c.above);
  flush(1u, c.equal);
  workgroupBarrier();
  if (lid < ROWS * COUNTS) {
    let n = atomicLoad(&local[lid]);
    if (n != 0u) {
      atomicAdd(&histogram[FIRST_ROW * COUNTS + lid], n);
    }
  }
}

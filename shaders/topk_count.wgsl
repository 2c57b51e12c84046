// TIES top-k select, step 1 where a sample has bracketed each threshold's key (src/engine/topk-select.ts):
// per row (a top-k of agent row mod AGENTS) and its bracket [lo, hi] of keys, the keys above hi, the
// keys equal to hi, the keys equal to lo, and every key strictly between them, collected. A sample
// of bf16 weights often holds one key all around k's rank (lo = hi, nothing between); where it holds
// several, the keys between are a percent or two of the tensor, so the host sorts the few it gets
// back and finds the threshold exactly. Where those counts place the row's k on hi, lo or a collected
// key, the threshold and its ties are exact (topk-bracket.ts); else (the bracket missed, or more keys
// lay between than the host made room for) the host falls back to the radix select (topk_hist).
// Zero keys are never counted as above (keeping a zero changes nothing); the keys are those of
// pair_keys in inputs.wgsl.
//
// On SwiftShader a pass costs what its loads and per-key work cost, so this one reads 16-bit inputs
// a vec4 (eight keys) at a time, keeps its counts in 8-bit fields of plain values (row i of the
// dispatch in bits 8i..8i+7; an invocation sees 64 keys per row) and adds them once per row per
// workgroup: no atomic per counted key, which is what the radix histogram pays. Only a key between
// lo and hi takes an atomic, to claim its slot. A dispatch counts up to four rows, those at places
// FIRST_ROW on of the host's order (the rows that collect first, so that they share dispatches),
// loading the base once for all of them. Input slots start on 16-byte boundaries (slotBytesFor in
// plumbing.ts).
//
// bracket (host-written): word 0 the collected keys' room per row, word 1 the tensor's chunks (the
// workgroups of all its windows); per place p of the order, at words 2 + 3p on, the row r counted
// there, its hi and its lo (NO_KEY where lo equals hi). histogram (host-cleared): per row COUNTS words: above hi,
// equal to hi, equal to lo, between (the collected keys, also those past the room). collected: row
// r's keys between, in any order, at words r · room + i, i < room. chunks: per row, the keys equal to
// hi in each chunk of the tensor (a workgroup's 16384 elements) at word 2r · chunks + chunk, equal to
// lo at (2r + 1) · chunks + chunk; from them the host finds the one chunk where a threshold's first
// tie not kept lies, and the tie marks are made there only (topk_ties.wgsl).

override FIRST_ROW: u32 = 0u;
// Rows of this dispatch, 1 to 4.
override ROWS: u32 = 1u;
// Some row of the dispatch has lo below hi: count equal to lo and collect what lies between. Without
// it the pass is the cheaper one-key count (lo is NO_KEY in every row).
override COLLECT: bool = false;

// vec4 words per invocation: 64 keys, 16384 per workgroup (COUNT_QUADS in topk_count.ts).
const QUADS: u32 = 8u;
// Words of the bracket buffer before its rows (BRACKET_HEADER in topk_count.ts).
const BRACKET_HEADER: u32 = 2u;
const COUNTS: u32 = 4u;
// Counters of a row added per workgroup (the between counter is claimed per invocation).
const LOCAL_COUNTS: u32 = 3u;

@group(0) @binding(1) var<storage, read> inputs: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> histogram: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> collected: array<u32>;
@group(0) @binding(4) var<storage, read> bracket: array<u32>;
@group(0) @binding(5) var<storage, read_write> chunks: array<u32>;

var<workgroup> local: array<atomic<u32>, 4u * LOCAL_COUNTS>;

// f32 bits of the low (`high` false) or high 16-bit halves of four input words.
fn halves(words: vec4<u32>, high: bool) -> vec4<u32> {
  // bf16 is the high half of its f32: one operation per half.
  if (IN_DTYPE == DTYPE_BF16) {
    if (high) {
      return words & vec4<u32>(0xffff0000u);
    }
    return words << vec4<u32>(16u);
  }
  let h = select(words & vec4<u32>(0xffffu), words >> vec4<u32>(16u), high);
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
      atomicAdd(&local[i * LOCAL_COUNTS + c], n);
    }
  }
}

struct Counts {
  above: vec4<u32>,
  equal_hi: vec4<u32>,
  equal_lo: vec4<u32>,
  between: vec4<u32>,
}

// The keys of row r strictly between lo and hi (COLLECT only: else lo is never asked for).
fn between_keys(keys: vec4<u32>, hi: u32, lo: u32) -> vec4<bool> {
  return (keys > vec4<u32>(lo)) & (keys < vec4<u32>(hi));
}

fn count_keys(c: Counts, hi: u32, lo: u32, keys: vec4<u32>, bit: vec4<u32>) -> Counts {
  let zero = vec4<u32>(0u);
  var r = c;
  r.above += select(zero, bit, keys > vec4<u32>(hi));
  r.equal_hi += select(zero, bit, keys == vec4<u32>(hi));
  if (COLLECT) {
    r.equal_lo += select(zero, bit, keys == vec4<u32>(lo));
    r.between += select(zero, bit, between_keys(keys, hi, lo));
  }
  return r;
}

// The first vec4 word of row r's 16-bit inputs (its agent's slot).
fn row_start(r: u32, slot: u32) -> u32 {
  return (r % AGENTS + 1u) * slot;
}

// The row at place p of the host's order, its hi and its lo.
struct Place {
  row: u32,
  hi: u32,
  lo: u32,
}

fn place(p: u32) -> Place {
  let at = BRACKET_HEADER + 3u * p;
  return Place(bracket[at], bracket[at + 1u], bracket[at + 2u]);
}

// What the counting loop reads of the row at place FIRST_ROW + i, loaded once before it: its keys
// and its slot's first word (SwiftShader would otherwise load the place and divide per word).
struct Counted {
  start: u32,
  hi: u32,
  lo: u32,
}

fn counted_row(i: u32, slot: u32) -> Counted {
  let p = place(FIRST_ROW + i);
  return Counted(row_start(p.row, slot), p.hi, p.lo);
}

// The keys of the row at place FIRST_ROW + i of the eight elements of vec4 word q, counted in field i.
fn count_row(
  c: Counts,
  i: u32,
  counted: Counted,
  q: u32,
  base_low: vec4<u32>,
  base_high: vec4<u32>,
  valid_low: vec4<bool>,
  valid_high: vec4<bool>,
) -> Counts {
  let words = inputs[counted.start + q];
  let bit = vec4<u32>(1u << (8u * i));
  let hi = counted.hi;
  let lo = counted.lo;
  let low = count_keys(c, hi, lo, keys4(halves(words, false), base_low, valid_low), bit);
  return count_keys(low, hi, lo, keys4(halves(words, true), base_high, valid_high), bit);
}

// Element 8q + 2k (low half of word k) and 8q + 2k + 1 (high half) inside the window.
fn valid_halves(q: u32) -> array<vec4<bool>, 2> {
  let even = vec4<u32>(8u * q) + vec4<u32>(0u, 2u, 4u, 6u);
  return array<vec4<bool>, 2>(even < vec4<u32>(params.count), even + vec4<u32>(1u) < vec4<u32>(params.count));
}

// Stores the keys of `keys` between lo and hi at row r's slots from `at` on (those past the room are
// dropped: the host sees the between counter exceed it); the next free slot.
fn store_between(r: u32, keys: vec4<u32>, hi: u32, lo: u32, at: u32) -> u32 {
  let room = bracket[0];
  let between = between_keys(keys, hi, lo);
  var next = at;
  for (var k = 0u; k < 4u; k++) {
    if (between[k]) {
      if (next < room) {
        collected[r * room + next] = keys[k];
      }
      next++;
    }
  }
  return next;
}

// Collects this invocation's `n` keys of the row at place FIRST_ROW + i between lo and hi: one atomic to claim
// their slots, then its words loaded again. Only invocations that saw such keys run it, after the
// counting loop, so the loop itself carries no atomic (on SwiftShader one inside it, even never
// taken, cost most of a counting pass).
fn collect_row(i: u32, n: u32, first: u32, slot: u32) {
  let counted = place(FIRST_ROW + i);
  let r = counted.row;
  let hi = counted.hi;
  let lo = counted.lo;
  var at = atomicAdd(&histogram[r * COUNTS + 3u], n);
  for (var j = 0u; j < QUADS; j++) {
    let q = first + j * WORKGROUP;
    if (8u * q >= params.count) {
      break;
    }
    let valid = valid_halves(q);
    let base = inputs[q];
    let words = inputs[row_start(r, slot) + q];
    at = store_between(r, keys4(halves(words, false), halves(base, false), valid[0]), hi, lo, at);
    at = store_between(r, keys4(halves(words, true), halves(base, true), valid[1]), hi, lo, at);
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) lid: u32) {
  let group = workgroup_index(wid);
  if (group >= params.groups) {
    return;
  }
  if (lid < ROWS * LOCAL_COUNTS) {
    atomicStore(&local[lid], 0u);
  }
  workgroupBarrier();
  let zero = vec4<u32>(0u);
  var c = Counts(zero, zero, zero, zero);
  let slot = params.slot_words / 4u;
  let first = group * WORKGROUP * QUADS + lid;
  let row0 = counted_row(0u, slot);
  var row1 = row0;
  var row2 = row0;
  var row3 = row0;
  if (ROWS > 1u) {
    row1 = counted_row(1u, slot);
  }
  if (ROWS > 2u) {
    row2 = counted_row(2u, slot);
  }
  if (ROWS > 3u) {
    row3 = counted_row(3u, slot);
  }
  for (var j = 0u; j < QUADS; j++) {
    let q = first + j * WORKGROUP;
    if (8u * q >= params.count) {
      break;
    }
    let valid = valid_halves(q);
    let valid_low = valid[0];
    let valid_high = valid[1];
    let base = inputs[q];
    let base_low = halves(base, false);
    let base_high = halves(base, true);
    // Rows written out: SwiftShader does not unroll a loop of a constant count, and unrolled, each
    // row's field and slot are constants.
    c = count_row(c, 0u, row0, q, base_low, base_high, valid_low, valid_high);
    if (ROWS > 1u) {
      c = count_row(c, 1u, row1, q, base_low, base_high, valid_low, valid_high);
    }
    if (ROWS > 2u) {
      c = count_row(c, 2u, row2, q, base_low, base_high, valid_low, valid_high);
    }
    if (ROWS > 3u) {
      c = count_row(c, 3u, row3, q, base_low, base_high, valid_low, valid_high);
    }
  }
  flush(0u, c.above);
  flush(1u, c.equal_hi);
  if (COLLECT) {
    flush(2u, c.equal_lo);
    let between = c.between.x + c.between.y + c.between.z + c.between.w;
    for (var i = 0u; i < ROWS; i++) {
      let n = (between >> (8u * i)) & 0xffu;
      if (n != 0u) {
        collect_row(i, n, first, slot);
      }
    }
  }
  workgroupBarrier();
  if (lid < ROWS * LOCAL_COUNTS) {
    let n = atomicLoad(&local[lid]);
    let row = place(FIRST_ROW + lid / LOCAL_COUNTS).row;
    let c = lid % LOCAL_COUNTS;
    if (n != 0u) {
      atomicAdd(&histogram[row * COUNTS + c], n);
    }
    // Every chunk's ties, zeros too: the buffer is not cleared.
    if (c != 0u) {
      chunks[(2u * row + c - 1u) * bracket[1] + params.chunk_base + group] = n;
    }
  }
}

// Folds one chunk of logits [rows, n] (vocabulary ids vocab_start …) into each row's running score:
// one workgroup per row finds the chunk's maximum (ties: the lowest id), its second-highest logit and
// Σ exp(l − max), then invocation 0 merges them into the row's state, as src/eval/reference.ts
// scoreChunk does. NaN logits are skipped; LOWEST marks "none yet" (the host reads it as −∞).

struct Params {
  rows: u32,
  n: u32,
  vocab_start: u32,
  groups_x: u32,
}

struct RowState {
  m: f32,        // maximum so far
  s: f32,        // Σ exp(l − m)
  t: f32,        // the target's logit (NaN until its chunk comes)
  m2: f32,       // second-highest logit
  argmax: i32,   // −1 until a chunk comes
  target_id: i32,  // −1: none
  seen: u32,     // 1 once a chunk with a finite logit came
  pad: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> logits: array<f32>;
@group(0) @binding(2) var<storage, read_write> state: array<RowState>;

const LOWEST: f32 = -0x1.fffffep+127f;
const NONE: u32 = 0xffffffffu;

var<workgroup> best: array<f32, 256>;
var<workgroup> best_id: array<u32, 256>;
var<workgroup> second: array<f32, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let row = wid.y * params.groups_x + wid.x;
  if (row >= params.rows) {
    return;
  }
  let base = row * params.n;
  // Ids ascend within an invocation, so a strict > keeps the lowest id of a tie.
  var b = LOWEST;
  var bi = NONE;
  var b2 = LOWEST;
  for (var i = lid; i < params.n; i += 256u) {
    let l = logits[base + i];
    if (l > b) {
      b2 = b;
      b = l;
      bi = i;
    } else if (l > b2) {
      b2 = l;
    }
  }
  best[lid] = b;
  best_id[lid] = bi;
  second[lid] = b2;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let ob = best[lid + s];
      let oi = best_id[lid + s];
      let mb = best[lid];
      if (ob > mb || (ob == mb && oi < best_id[lid])) {
        second[lid] = max(second[lid + s], mb);
        best[lid] = ob;
        best_id[lid] = oi;
      } else {
        second[lid] = max(second[lid], ob);
      }
    }
    workgroupBarrier();
  }
  let chunk_max = best[0];
  let chunk_id = best_id[0];
  let chunk_second = second[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var i = lid; i < params.n; i += 256u) {
    let l = logits[base + i];
    if (l == l) {
      sum += exp(l - chunk_max);
    }
  }
  // `best` is free again: reuse it for the sums.
  best[lid] = sum;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (lid < s) {
      best[lid] += best[lid + s];
    }
    workgroupBarrier();
  }
  if (lid != 0u) {
    return;
  }
  let chunk_sum = best[0];
  var st = state[row];
  let local = st.target_id - i32(params.vocab_start);
  if (st.target_id >= 0 && local >= 0 && u32(local) < params.n) {
    st.t = logits[base + u32(local)];
  }
  if (chunk_id != NONE) {
    let id = i32(params.vocab_start + chunk_id);
    if (st.seen == 0u) {
      st.m = chunk_max;
      st.s = chunk_sum;
      st.m2 = chunk_second;
      st.argmax = id;
      st.seen = 1u;
    } else if (chunk_max > st.m) {
      st.s = st.s * exp(st.m - chunk_max) + chunk_sum;
      st.m2 = max(st.m, chunk_second);
      st.m = chunk_max;
      st.argmax = id;
    } else {
      st.s += chunk_sum * exp(chunk_max - st.m);
      // chunk_max ≤ m: an equal maximum is a tie (m2 = m, the lower id stays), a lower one can only
      // raise m2.
      st.m2 = max(st.m2, chunk_max);
      if (chunk_max == st.m) {
        st.argmax = min(st.argmax, id);
      }
    }
  }
  state[row] = st;
}

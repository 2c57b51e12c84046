// Branch counts of what a sparsifying merge kept (src/engine/merge-branches.ts): per element, the agents
// whose sparsified tau was summed into the output. Compiled in with COUNT_BRANCHES only, so merges that
// do not count cost nothing.
//
// The host needs only how many elements fall in each class (c agents summed, c = 2..AGENTS, or agent t
// alone) and how many keep voters of both signs, so those are counted independently: no atomic per
// element, but one per class an invocation saw, at its end. An invocation merges BRANCH_ROUNDS rounds of
// four elements (kernels/ties.ts dispatches that many times fewer workgroups) and keeps its class counts
// in 8-bit fields of plain vec4 values (a private array SwiftShader keeps in memory).
//
// branches layout (src/engine/kernels/branches.ts mirrors it): BRANCH_SLOTS copies of branch_stride()
// words, class c at word c − 2, agent t alone at word AGENTS − 1 + t, sign conflicts at word
// 2·AGENTS − 1; a workgroup adds into copy (workgroup mod BRANCH_SLOTS) so that SwiftShader's threads
// do not all contend for one line.

override COUNT_BRANCHES: bool = false;

@group(0) @binding(6) var<storage, read_write> branches: array<atomic<u32>>;

const BRANCH_SLOTS: u32 = 8u;
// Rounds of two pairs per invocation: at most 4 per round in a field, so 4 · 63 ≤ 255 at most.
const BRANCH_ROUNDS: u32 = 32u;

// 2·AGENTS counters rounded up to 16, so two copies never share a 64-byte line.
fn branch_stride() -> u32 {
  return (2u * AGENTS + 15u) & ~15u;
}

// Per lane, the agents with a non-zero w·tau of each sign so far, a bit per agent.
struct Voters {
  pos: vec2<u32>,
  neg: vec2<u32>,
}

fn no_voters() -> Voters {
  return Voters(vec2<u32>(0u), vec2<u32>(0u));
}

// Adds agent t with weight w and sparsified tau x: a voter where w·x is non-zero and the agent's bits
// differ from the base's (an element every model holds as the same NaN or ±Inf is unchanged, whatever
// x holds there), on the side of the sign of w·x.
fn add_voter(v: Voters, t: u32, x: vec2<f32>, w: f32, changed: vec2<bool>) -> Voters {
  let voting = (x != vec2<f32>(0.0)) & vec2<bool>(w != 0.0) & changed;
  let up = (x > vec2<f32>(0.0)) == vec2<bool>(w > 0.0);
  return add_sides(v, t, voting & up, voting & !up);
}

// Adds agent t as a voter on the positive side where `pos`, on the negative side where `neg`.
fn add_sides(v: Voters, t: u32, pos: vec2<bool>, neg: vec2<bool>) -> Voters {
  let bit = vec2<u32>(1u << t);
  let zero = vec2<u32>(0u);
  return Voters(v.pos | select(zero, bit, pos), v.neg | select(zero, bit, neg));
}

// A pair's summed agents (the sides in `keep_pos` / `keep_neg`), and where voters of both signs remain.
struct Branches {
  summed: vec2<u32>,
  conflict: vec2<bool>,
}

fn summed_branches(v: Voters, keep_pos: vec2<bool>, keep_neg: vec2<bool>) -> Branches {
  let zero = vec2<u32>(0u);
  return Branches(
    select(zero, v.pos, keep_pos) | select(zero, v.neg, keep_neg),
    (v.pos != zero) & (v.neg != zero),
  );
}

// An invocation's counts, in 8-bit fields (k for the counter at word k of the layout above, k < 2·AGENTS − 1)
// and the conflicts in a plain count. With 4 agents or fewer, agent t alone in byte t of a.y and c agents
// in byte c − 2 of a.x; else field k in byte k % 4 of component (k / 4) % 4 of a (k < 16), b, c or d.
struct BranchFields {
  a: vec4<u32>,
  b: vec4<u32>,
  c: vec4<u32>,
  d: vec4<u32>,
  conflicts: u32,
}

fn no_branch_fields() -> BranchFields {
  let zero = vec4<u32>(0u);
  return BranchFields(zero, zero, zero, zero, 0u);
}

// Times a 4-bit mask, moves its bit i to bit 8i (overlap_count.wgsl's spread).
const BRANCH_SPREAD: u32 = 0x204081u;
const BRANCH_FIELD_ONES: u32 = 0x01010101u;

// `one` in the component of fields word `word` among words first..first + 3, else 0.
fn field_word(word: u32, one: u32, first: u32) -> vec4<u32> {
  return select(vec4<u32>(0u), vec4<u32>(one), vec4<u32>(word) == vec4<u32>(first) + vec4<u32>(0u, 1u, 2u, 3u));
}

// Adds pair p's branches (its lanes inside the window only).
fn add_branches(f: BranchFields, p: u32, s: Branches) -> BranchFields {
  let valid = vec2<u32>(2u * p, 2u * p + 1u) < vec2<u32>(params.count);
  let zero = vec2<u32>(0u);
  var r = f;
  if (AGENTS <= 4u) {
    // Each summed agent's bit in its own byte, and their number as the sum of the bytes: no bit counts.
    let spread = (s.summed * vec2<u32>(BRANCH_SPREAD)) & vec2<u32>(BRANCH_FIELD_ONES);
    let n = (spread * vec2<u32>(BRANCH_FIELD_ONES)) >> vec2<u32>(24u);
    let alone = select(zero, spread, valid & (n == vec2<u32>(1u)));
    let kinds = select(zero, vec2<u32>(1u) << (8u * (n - vec2<u32>(2u))), valid & (n >= vec2<u32>(2u)));
    r.a = vec4<u32>(r.a.x + kinds.x + kinds.y, r.a.y + alone.x + alone.y, r.a.zw);
  } else {
    let n = countOneBits(s.summed);
    let k = select(n - vec2<u32>(2u), vec2<u32>(AGENTS - 1u) + countTrailingZeros(s.summed), n == vec2<u32>(1u));
    let one = select(zero, vec2<u32>(1u) << (8u * (k & vec2<u32>(3u))), valid & (n != zero));
    let word = k >> vec2<u32>(2u);
    r.a += field_word(word.x, one.x, 0u) + field_word(word.y, one.y, 0u);
    if (AGENTS > 8u) {
      r.b += field_word(word.x, one.x, 4u) + field_word(word.y, one.y, 4u);
    }
    if (AGENTS > 16u) {
      r.c += field_word(word.x, one.x, 8u) + field_word(word.y, one.y, 8u);
    }
    if (AGENTS > 24u) {
      r.d += field_word(word.x, one.x, 12u) + field_word(word.y, one.y, 12u);
    }
  }
  let conflicts = valid & s.conflict;
  r.conflicts += select(0u, 1u, conflicts.x) + select(0u, 1u, conflicts.y);
  return r;
}

fn branch_field(f: BranchFields, k: u32) -> u32 {
  if (AGENTS <= 4u) {
    let kinds = k < AGENTS - 1u;
    return (select(f.a.y, f.a.x, kinds) >> (8u * select(k - (AGENTS - 1u), k, kinds))) & 0xffu;
  }
  let word = k >> 2u;
  let four = select(select(f.a, f.b, word >= 4u), select(f.c, f.d, word >= 12u), word >= 8u);
  return (four[word & 3u] >> (8u * (k & 3u))) & 0xffu;
}

// Adds an invocation's non-zero counts to its workgroup's copy of the counters.
fn flush_branches(group: u32, f: BranchFields) {
  let slot = (group % BRANCH_SLOTS) * branch_stride();
  for (var k = 0u; k < 2u * AGENTS - 1u; k++) {
    let n = branch_field(f, k);
    if (n != 0u) {
      atomicAdd(&branches[slot + k], n);
    }
  }
  if (f.conflicts != 0u) {
    atomicAdd(&branches[slot + 2u * AGENTS - 1u], f.conflicts);
  }
}

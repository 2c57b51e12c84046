// Branch counts of what a sparsifying merge kept (src/engine/merge-branches.ts): per element, the agents
// whose sparsified tau was summed into the output. Compiled in with COUNT_BRANCHES only, so merges that
// do not count cost nothing.
//
// Each element gets a code: 2·class + conflict, class 0 (no agent summed), c (2..AGENTS: c agents) or
// AGENTS + 1 + t (agent t alone), conflict 1 where voters of both signs remain. A pair of elements adds
// one to the counter of its two codes, so each pair costs one atomicAdd (none when neither element has a
// voter), where per-class counters took up to three.
//
// branches layout (src/engine/kernels/branches.ts mirrors it): BRANCH_SLOTS copies of
// branch_stride() words, counter code_x · branch_codes() + code_y at word code_x · branch_codes() +
// code_y of a copy; a workgroup adds into copy (workgroup mod BRANCH_SLOTS) so that SwiftShader's
// threads do not all contend for one line.

override COUNT_BRANCHES: bool = false;

@group(0) @binding(6) var<storage, read_write> branches: array<atomic<u32>>;

const BRANCH_SLOTS: u32 = 8u;

// Codes per element: 2 · (2·AGENTS + 1).
fn branch_codes() -> u32 {
  return 4u * AGENTS + 2u;
}

// branch_codes()² words rounded up to 16, so two copies never share a 64-byte line.
fn branch_stride() -> u32 {
  return (branch_codes() * branch_codes() + 15u) & ~15u;
}

// Per lane, the agents with a non-zero w·tau of each sign so far, and the last of them.
struct Contributors {
  pos: vec2<u32>,
  neg: vec2<u32>,
  pos_agent: vec2<u32>,
  neg_agent: vec2<u32>,
}

fn no_contributors() -> Contributors {
  return Contributors(vec2<u32>(0u), vec2<u32>(0u), vec2<u32>(0u), vec2<u32>(0u));
}

// Adds agent t where `voting` (w·tau non-zero), on the side of its sign (`up`: w·tau > 0).
fn contribute(c: Contributors, t: u32, voting: vec2<bool>, up: vec2<bool>) -> Contributors {
  let pos = voting & up;
  let neg = voting & !up;
  return Contributors(
    c.pos + select(vec2<u32>(0u), vec2<u32>(1u), pos),
    c.neg + select(vec2<u32>(0u), vec2<u32>(1u), neg),
    select(c.pos_agent, vec2<u32>(t), pos),
    select(c.neg_agent, vec2<u32>(t), neg),
  );
}

// Adds agent t with weight w and sparsified tau x: a voter where w·x is non-zero and the agent's bits
// differ from the base's (an element every model holds as the same NaN or ±Inf is unchanged, whatever
// x holds there), on the side of the sign of w·x.
fn add_voter(c: Contributors, t: u32, x: vec2<f32>, w: f32, changed: vec2<bool>) -> Contributors {
  let voting = (x != vec2<f32>(0.0)) & vec2<bool>(w != 0.0) & changed;
  return contribute(c, t, voting, (x > vec2<f32>(0.0)) == vec2<bool>(w > 0.0));
}

// Counts pair p (its second lane only inside the window), the sides in `keep_pos` / `keep_neg` being
// the ones summed.
fn count_branches(p: u32, c: Contributors, keep_pos: vec2<bool>, keep_neg: vec2<bool>) {
  let count = select(vec2<u32>(0u), c.pos, keep_pos) + select(vec2<u32>(0u), c.neg, keep_neg);
  let agent = select(c.neg_agent, c.pos_agent, keep_pos & (c.pos != vec2<u32>(0u)));
  let kind = select(count, vec2<u32>(AGENTS + 1u) + agent, count == vec2<u32>(1u));
  let conflict = (c.pos != vec2<u32>(0u)) & (c.neg != vec2<u32>(0u));
  var code = 2u * kind + select(vec2<u32>(0u), vec2<u32>(1u), conflict);
  code.y = select(0u, code.y, 2u * p + 1u < params.count);
  if (any(code != vec2<u32>(0u))) {
    let slot = ((p / WORKGROUP) % BRANCH_SLOTS) * branch_stride();
    atomicAdd(&branches[slot + code.x * branch_codes() + code.y], 1u);
  }
}

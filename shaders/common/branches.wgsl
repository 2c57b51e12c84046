// Branch counts of what a sparsifying merge kept (src/engine/merge-branches.ts): per element, the agents
// whose sparsified tau was summed into the output. Compiled in with COUNT_BRANCHES only, so merges that
// do not count cost nothing.
//
// branches layout (src/engine/kernels/branches.ts mirrors it), BRANCH_SLOTS copies of branch_stride()
// words, a workgroup adding into copy (workgroup mod BRANCH_SLOTS) so that SwiftShader's threads do not
// all contend for one word:
//   0              elements whose voting agents' w·tau disagree in sign
//   c (2..AGENTS)  elements summed from exactly c agents
//   AGENTS + 1 + t elements summed from agent t alone
// Elements of no contributor are not counted (the host takes them as the rest of the tensor).

override COUNT_BRANCHES: bool = false;

@group(0) @binding(6) var<storage, read_write> branches: array<atomic<u32>>;

const BRANCH_SLOTS: u32 = 8u;

// 2·AGENTS + 1 words rounded up to 16, so two copies never share a 64-byte line.
fn branch_stride() -> u32 {
  return (2u * AGENTS + 16u) & ~15u;
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

// Counts pair p's valid lanes, the sides in `keep_pos` / `keep_neg` being the ones summed. Both lanes
// of one class take one atomicAdd; an element of no contributor takes none.
fn count_branches(p: u32, c: Contributors, keep_pos: vec2<bool>, keep_neg: vec2<bool>) {
  let valid = vec2<bool>(true, 2u * p + 1u < params.count);
  let base = ((p / WORKGROUP) % BRANCH_SLOTS) * branch_stride();
  let count = select(vec2<u32>(0u), c.pos, keep_pos) + select(vec2<u32>(0u), c.neg, keep_neg);
  let agent = select(c.neg_agent, c.pos_agent, keep_pos & (c.pos != vec2<u32>(0u)));
  let index = select(count, vec2<u32>(AGENTS + 1u) + agent, count == vec2<u32>(1u));
  let counted = valid & (count != vec2<u32>(0u));
  if (counted.x && counted.y && index.x == index.y) {
    atomicAdd(&branches[base + index.x], 2u);
  } else {
    if (counted.x) {
      atomicAdd(&branches[base + index.x], 1u);
    }
    if (counted.y) {
      atomicAdd(&branches[base + index.y], 1u);
    }
  }
  let conflict = valid & (c.pos != vec2<u32>(0u)) & (c.neg != vec2<u32>(0u));
  if (any(conflict)) {
    atomicAdd(&branches[base], countOneBits(select(0u, 1u, conflict.x) | select(0u, 2u, conflict.y)));
  }
}

// Re-encodes slot 0 of the window from the input dtype to the output dtype, bit-exactly where the
// output can hold the value (widening) and round-to-nearest-even otherwise: the codec's test vehicle.

struct Scan {
  unused: u32,
}

struct Merged {
  bits: vec2<u32>,
  scan: Scan,
}

fn merged_pair(p: u32) -> Merged {
  return Merged(load_pair_bits(0u, p), Scan(0u));
}

// The codec alone: no non-finite checks, every value converted as it is.
fn finish_pair(p: u32, merged: vec2<u32>, s: Scan, valid: vec2<bool>) -> vec2<u32> {
  return encode_pair(merged);
}

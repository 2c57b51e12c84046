// Streaming SHA-256 (hex digest) for checksums of written shards and of inputs, without holding a file.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';

export class Sha256 {
  private readonly state = sha256.create();

  update(chunk: Uint8Array): void {
    this.state.update(chunk);
  }

  hex(): string {
    return bytesToHex(this.state.digest());
  }
}

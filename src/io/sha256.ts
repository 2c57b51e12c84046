// Streaming SHA-256 (hex digest) for checksums of written shards and of inputs, without holding a file.
// In Node the built-in hash (OpenSSL: ~1.5 GB/s on this project's machine), reached through
// process.getBuiltinModule so that this module still loads in the browser; elsewhere, or where Node
// lacks it (before 20.16), the audited pure-JavaScript @noble/hashes (~170 MB/s). The CLI hashes every
// input for the model card beside the merge: in JavaScript that was three quarters of a RAM merge's
// main-thread time on a 1.33 GiB set.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';

/** Where the digest is computed: Node's built-in crypto, or JavaScript. */
export type Sha256Backend = 'node' | 'js';

interface State {
  update(chunk: Uint8Array): void;
  hex(): string;
}

/** The part of node:crypto used here (typed structurally: this module is platform-free). */
interface NodeCrypto {
  createHash(algorithm: 'sha256'): { update(data: Uint8Array): unknown; digest(encoding: 'hex'): string };
}

function builtinCrypto(): NodeCrypto | null {
  const node = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process;
  const crypto = node?.getBuiltinModule?.('node:crypto') as NodeCrypto | undefined;
  return typeof crypto?.createHash === 'function' ? crypto : null;
}

const nodeCrypto = builtinCrypto();

function nodeState(crypto: NodeCrypto): State {
  const hash = crypto.createHash('sha256');
  return { update: (chunk) => void hash.update(chunk), hex: () => hash.digest('hex') };
}

function jsState(): State {
  const hash = sha256.create();
  return { update: (chunk) => void hash.update(chunk), hex: () => bytesToHex(hash.digest()) };
}

export class Sha256 {
  /** The backend a Sha256 uses unless told otherwise: Node's where this runs in Node. */
  static readonly backend: Sha256Backend = nodeCrypto ? 'node' : 'js';
  private readonly state: State;

  /** `backend` 'node' outside Node falls back to JavaScript. */
  constructor(backend: Sha256Backend = Sha256.backend) {
    this.state = backend === 'node' && nodeCrypto ? nodeState(nodeCrypto) : jsState();
  }

  update(chunk: Uint8Array): void {
    this.state.update(chunk);
  }

  hex(): string {
    return this.state.hex();
  }
}

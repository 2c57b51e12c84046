// Streaming SHA-256 (hex digest) for checksums of written shards and of inputs, without holding a file.
// In Node the built-in hash (OpenSSL: ~1.5 GB/s on this project's machine), reached through
// process.getBuiltinModule so that this module still loads in the browser. There, once
// loadWasmSha256() has compiled it, hash-wasm's WebAssembly SHA-256 (~360 MB/s): the studio's worker
// hashes each shard as it writes it and again when it reads it back. Before that, or where the page's
// policy forbids WebAssembly, or in a Node without the built-in (before 20.16), the audited
// pure-JavaScript @noble/hashes (~170 MB/s). The CLI hashes every input for the model card beside the
// merge: in JavaScript that was three quarters of a RAM merge's main-thread time on a 1.33 GiB set.
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createSHA256, type IHasher } from 'hash-wasm';

/** Where the digest is computed: Node's built-in crypto, WebAssembly, or JavaScript. */
export type Sha256Backend = 'node' | 'wasm' | 'js';

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

/** The one compiled WebAssembly hasher: each Sha256 keeps its own state and loads it around each use. */
let wasm: IHasher | null = null;
let loading: Promise<boolean> | null = null;

/**
 * Compiles the WebAssembly SHA-256 (once; later calls wait for the first): true where it is ready,
 * false where it cannot be (the page's policy forbids WebAssembly), and hashes stay in JavaScript.
 */
export function loadWasmSha256(): Promise<boolean> {
  loading ??= createSHA256().then(
    (hasher) => {
      wasm = hasher;
      return true;
    },
    () => false,
  );
  return loading;
}

function wasmState(hasher: IHasher): State {
  hasher.init();
  let saved = hasher.save();
  return {
    update(chunk) {
      hasher.load(saved);
      hasher.update(chunk);
      saved = hasher.save();
    },
    hex() {
      hasher.load(saved);
      return hasher.digest('hex');
    },
  };
}

/** The backend a Sha256 uses unless told otherwise: Node's where this runs in Node, else WebAssembly once loaded. */
export function sha256Backend(): Sha256Backend {
  return nodeCrypto ? 'node' : wasm ? 'wasm' : 'js';
}

export class Sha256 {
  private readonly state: State;

  /** A backend not available here ('node' outside Node, 'wasm' before it loaded) falls back to JavaScript. */
  constructor(backend: Sha256Backend = sha256Backend()) {
    if (backend === 'node' && nodeCrypto) this.state = nodeState(nodeCrypto);
    else if (backend === 'wasm' && wasm) this.state = wasmState(wasm);
    else this.state = jsState();
  }

  update(chunk: Uint8Array): void {
    this.state.update(chunk);
  }

  hex(): string {
    return this.state.hex();
  }
}

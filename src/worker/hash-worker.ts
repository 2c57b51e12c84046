// The shard hash worker, started by the engine worker (worker-merge.ts): it hashes the bytes of the
// shards a merge writes, off the engine worker's thread (src/io/sha256-offload.ts says why). It
// receives merged weights, so it locks the network out first, as the engine worker does.
import { lockDownNetwork } from './network-lockdown.ts';
import { loadWasmSha256 } from '../io/sha256.ts';
import { serveHashPort, type HashReply, type HashRequest, type HashPort } from '../io/sha256-offload.ts';

lockDownNetwork(self as unknown as Parameters<typeof lockDownNetwork>[0]);
serveHashPort(self as unknown as HashPort<HashRequest, HashReply>, loadWasmSha256());

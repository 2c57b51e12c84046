// Lets Node run the TypeScript sources directly: tsx for .ts, plus Vite's `?raw` imports (WGSL).
import { register } from 'node:module';
import { register as registerTsx } from 'tsx/esm/api';

registerTsx();
// Registered after tsx, so it sees `?raw` specifiers first.
register('./raw-hooks.mjs', import.meta.url);

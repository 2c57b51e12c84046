// Browser entry: renders the studio, starts GPU detection through the store, and in development
// and e2e builds exposes the typed test API on window.
// The dev server's CSP blocks the inline React Refresh preamble, so it is loaded as a module; empty in builds.
import '@vitejs/plugin-react/preamble';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { studioStore } from './state/store.ts';
import { createTestApi } from './state/test-api.ts';
import { App } from './ui/App.tsx';
import './ui/styles.css';

const root = document.getElementById('root');
if (!root) throw new Error('index.html has no #root element.');

if (import.meta.env.DEV || import.meta.env.MODE === 'e2e') window.__mergeStudio = createTestApi(studioStore);

createRoot(root).render(
  <StrictMode>
    <App />
  </StrictMode>,
);

void studioStore.getState().detectGpu();

// The worker's network lockdown on a stand-in global scope: every primitive gone for good, and the
// one fetch it keeps refuses other origins.
import { describe, expect, it } from 'vitest';
import { lockDownNetwork, NETWORK_GLOBALS } from './network-lockdown.ts';

function scope(): Record<string, unknown> & Parameters<typeof lockDownNetwork>[0] {
  const calls: string[] = [];
  return {
    calls,
    fetch: (async (url: string) => {
      calls.push(url);
      return new Response('ok');
    }) as typeof fetch,
    XMLHttpRequest: class {},
    WebSocket: class {},
    EventSource: class {},
    importScripts: () => undefined,
    location: { href: 'http://127.0.0.1:5204/assets/worker-abc.js', origin: 'http://127.0.0.1:5204' },
  };
}

describe('lockDownNetwork', () => {
  it('removes every network global so that nothing can put one back', () => {
    const s = scope();
    lockDownNetwork(s);
    for (const name of NETWORK_GLOBALS) {
      expect(s[name], name).toBeUndefined();
      expect(() => {
        'use strict';
        (s as Record<string, unknown>)[name] = 'again';
      }, name).toThrow(TypeError);
      expect(() => Object.defineProperty(s, name, { value: 1 }), name).toThrow(TypeError);
    }
  });

  it('keeps a fetch for the own origin only', async () => {
    const s = scope();
    const own = lockDownNetwork(s);
    expect(await (await own('/demo/base/model.safetensors')).text()).toBe('ok');
    expect(s.calls).toEqual(['http://127.0.0.1:5204/demo/base/model.safetensors']);
    await expect(own('http://192.0.2.1/weights.safetensors')).rejects.toThrow(
      /only from http:\/\/127\.0\.0\.1:5204/,
    );
    await expect(own('//evil.example/x')).rejects.toThrow(TypeError);
    expect(s.calls).toHaveLength(1);
  });
});

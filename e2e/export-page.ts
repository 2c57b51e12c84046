// Page helpers for merging into a picked folder: Playwright cannot drive the native folder picker,
// so an init script puts a picker in its place that hands out OPFS folders (the same handle type the
// real picker returns) and that a test can point at a chosen folder or make refuse write access.
import type { Locator, Page } from '@playwright/test';

/** What the stand-in picker reads from and records on `window`. */
interface PickerWindow {
  /** The OPFS folder the next pick returns (created when missing); a fresh `picked-…` one when unset. */
  __nextPickedFolder?: string;
  /** Name of the folder the last pick returned. */
  __lastPickedFolder?: string;
  /** When true, the picked handle answers requestPermission with 'denied'. */
  __denyWritePermission?: boolean;
}

export class ExportFolderPage {
  readonly folderButton: Locator;

  constructor(readonly page: Page) {
    this.folderButton = page.getByTestId('merge-run-folder');
  }

  /** Replaces showDirectoryPicker with one that returns OPFS folders; call before the page loads. */
  async installPicker(): Promise<void> {
    await this.page.addInitScript(() => {
      const state = window as unknown as PickerWindow;
      let picks = 0;
      Object.defineProperty(window, 'showDirectoryPicker', {
        configurable: true,
        value: async () => {
          const root = await navigator.storage.getDirectory();
          const name = state.__nextPickedFolder ?? `picked-${Date.now()}-${picks++}`;
          state.__lastPickedFolder = name;
          const handle = await root.getDirectoryHandle(name, { create: true });
          if (state.__denyWritePermission)
            Object.defineProperty(handle, 'requestPermission', { value: async () => 'denied' });
          return handle;
        },
      });
    });
  }

  /** Makes the next pick return this OPFS folder, holding these text files. */
  async pickFolder(name: string, files: Record<string, string> = {}): Promise<void> {
    await this.page.evaluate(
      async ([folder, contents]) => {
        const root = await navigator.storage.getDirectory();
        const dir = await root.getDirectoryHandle(folder, { create: true });
        for (const [file, text] of Object.entries(contents)) {
          const writable = await (await dir.getFileHandle(file, { create: true })).createWritable();
          await writable.write(text);
          await writable.close();
        }
        (window as unknown as PickerWindow).__nextPickedFolder = folder;
      },
      [name, files] as const,
    );
  }

  denyWritePermission(): Promise<void> {
    return this.page.evaluate(() => {
      (window as unknown as PickerWindow).__denyWritePermission = true;
    });
  }

  /** Name of the OPFS folder the last pick returned. */
  async lastPicked(): Promise<string> {
    const name = await this.page.evaluate(() => (window as unknown as PickerWindow).__lastPickedFolder);
    if (name === undefined) throw new Error('The folder picker has not been used yet.');
    return name;
  }

  /** Every entry (files and folders, swap files included) of an OPFS folder, sorted. */
  entries(folder: string): Promise<string[]> {
    return this.page.evaluate(async (name) => {
      const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(name);
      const names: string[] = [];
      for await (const key of dir.keys()) names.push(key);
      return names.sort();
    }, folder);
  }

  /** Flips every bit of byte `at` of a file of a top-level OPFS folder, in place. */
  async flipByte(folder: string, name: string, at: number): Promise<void> {
    await this.page.evaluate(
      async ([dirName, fileName, offset]) => {
        const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(dirName);
        const handle = await dir.getFileHandle(fileName);
        const old = new Uint8Array(await (await handle.getFile()).slice(offset, offset + 1).arrayBuffer());
        const writable = await handle.createWritable({ keepExistingData: true });
        await writable.write({
          type: 'write',
          position: offset,
          data: new Uint8Array([(old[0] ?? 0) ^ 0xff]),
        });
        await writable.close();
      },
      [folder, name, at] as const,
    );
  }

  /** A file of a top-level OPFS folder, as bytes. */
  async file(folder: string, name: string): Promise<Buffer> {
    const base64 = await this.page.evaluate(
      async ([dirName, fileName]) => {
        const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(dirName);
        const bytes = new Uint8Array(
          await (await (await dir.getFileHandle(fileName)).getFile()).arrayBuffer(),
        );
        let text = '';
        // In slices: String.fromCharCode takes its bytes as arguments.
        for (let at = 0; at < bytes.length; at += 0x8000)
          text += String.fromCharCode(...bytes.subarray(at, at + 0x8000));
        return btoa(text);
      },
      [folder, name] as const,
    );
    return Buffer.from(base64, 'base64');
  }
}

// Model folders picked with showDirectoryPicker, kept across reloads: directory handles can be stored
// in IndexedDB (files cannot), keyed by the model's label; the page asks for read access again before
// reading one, since the browser forgets the permission with the page.

export interface KeptFolder {
  label: string;
  role: 'base' | 'agent';
  handle: FileSystemDirectoryHandle;
}

const DATABASE = 'merge-studio';
const STORE = 'model-folders';

/** Whether this browser can keep handles (IndexedDB present). */
export function canKeepFolders(): boolean {
  return typeof indexedDB !== 'undefined';
}

function openDatabase(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DATABASE, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: 'label' });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error ?? new Error(`IndexedDB ${DATABASE} could not be opened`));
  });
}

async function transact<T>(
  mode: IDBTransactionMode,
  work: (store: IDBObjectStore) => IDBRequest<T>[],
): Promise<T[]> {
  const db = await openDatabase();
  try {
    const tx = db.transaction(STORE, mode);
    const requests = work(tx.objectStore(STORE));
    await new Promise<void>((resolve, reject) => {
      tx.oncomplete = () => resolve();
      tx.onerror = () => reject(tx.error ?? new Error(`IndexedDB ${STORE} failed`));
      tx.onabort = () => reject(tx.error ?? new Error(`IndexedDB ${STORE} was aborted`));
    });
    return requests.map((r) => r.result);
  } finally {
    db.close();
  }
}

/** Keeps these folders, each replacing one kept under the same label. */
export async function keepFolders(folders: readonly KeptFolder[]): Promise<void> {
  if (folders.length === 0 || !canKeepFolders()) return;
  await transact('readwrite', (store) => folders.map((f) => store.put(f)));
}

/** The kept folders of these labels, in their order; labels with none kept are left out. */
export async function keptFolders(labels: readonly string[]): Promise<KeptFolder[]> {
  if (labels.length === 0 || !canKeepFolders()) return [];
  const found = await transact('readonly', (store) =>
    labels.map((label) => store.get(label) as IDBRequest<KeptFolder | undefined>),
  );
  return found.filter((f): f is KeptFolder => f !== undefined);
}

/** Keeps a folder kept under `from` under `to` instead (a model renamed), so a reload finds it by its new name. */
export async function rekeepFolder(from: string, to: string): Promise<void> {
  if (from === to || !canKeepFolders()) return;
  const [found] = await keptFolders([from]);
  if (!found) return;
  await transact('readwrite', (store) => {
    store.delete(from);
    return [store.put({ ...found, label: to })];
  });
}

type PermissionHandle = FileSystemDirectoryHandle & {
  requestPermission?: (descriptor: { mode: 'read' | 'readwrite' }) => Promise<PermissionState>;
};

/**
 * Asks for read access to a kept folder (call from a click: the prompt needs user activation);
 * a browser without requestPermission grants what it hands out.
 */
export async function requestRead(handle: FileSystemDirectoryHandle): Promise<boolean> {
  const request = (handle as PermissionHandle).requestPermission;
  if (!request) return true;
  try {
    return (await request.call(handle, { mode: 'read' })) === 'granted';
  } catch {
    return false;
  }
}

// The tensor view and the element inspector as plain data: which tensor and element are inspected,
// the view's rectangle, the engine's block counts of that view and its explanation of one element.
// The canvas itself is handed to the engine worker once; the page never holds weights.
import type { StateCreator } from 'zustand';
import type { ElementExplanation, MaskPalette, MaskViewResult } from '../driver/tensor-view.ts';
import type { MaskView } from '../methods/mask-geometry.ts';
import type { EngineJob } from '../worker/client.ts';
import type { WorkerErrorInfo } from '../worker/protocol.ts';
import {
  idleTask,
  mergeInputs,
  type StudioServices,
  type StudioSlice,
  type TaskState,
} from './studio-slice.ts';

/** The canvas's size in pixels: the grid has at most this many blocks down and across. */
export const MASK_CANVAS_SIZE = { width: 512, height: 512 } as const;

export interface InspectData {
  /** The tensor of the view and the inspector ('' before one is chosen). */
  tensor: string;
  /** The element the inspector explains: a flat index into the tensor. */
  index: number;
  /** The rectangle shown; null is the whole tensor. */
  view: MaskView | null;
  mask: TaskState<MaskViewResult>;
  explain: TaskState<ElementExplanation>;
  /** Whether the engine holds the view's canvas (drawing needs it; counts do not). */
  canvas: boolean;
}

export interface InspectSlice {
  inspect: InspectData;
  /** Opens a tensor in the tensor view (whole) and, with an index, selects that element. */
  inspectTensor(name: string, index?: number): Promise<void>;
  /** Sets the tensor or element the inspector will explain, without running anything. */
  setInspectTarget(changes: { tensor?: string; index?: number }): void;
  /** Shows another rectangle of the current tensor (null: all of it): one pass in the engine. */
  setMaskView(view: MaskView | null): Promise<void>;
  /** Hands the view's canvas (transferred from the page) to the engine, with the colours to draw in. */
  attachMaskCanvas(canvas: OffscreenCanvas, palette: MaskPalette): Promise<void>;
  /** Explains the selected element with the current recipe, by the engine's merge of that tensor. */
  runExplain(): Promise<void>;
}

export function initialInspectData(): InspectData {
  return { tensor: '', index: 0, view: null, mask: idleTask(), explain: idleTask(), canvas: false };
}

function infoOf(error: unknown): WorkerErrorInfo {
  const info = (error as { info?: WorkerErrorInfo }).info;
  if (info) return info;
  return error instanceof Error
    ? { name: error.name, message: error.message }
    : { name: 'Error', message: String(error) };
}

const failed = <T>(error: WorkerErrorInfo): TaskState<T> => ({
  status: 'error',
  progress: null,
  error,
  result: null,
});

export function createInspectSlice(
  services: StudioServices,
): StateCreator<InspectSlice & StudioSlice, [], [], InspectSlice> {
  return (set, get) => {
    const patch = (changes: Partial<InspectData>): void => set({ inspect: { ...get().inspect, ...changes } });
    let palette: MaskPalette = [];
    let maskJob: EngineJob<MaskViewResult> | null = null;
    let explainJob: EngineJob<ElementExplanation> | null = null;

    async function showMask(): Promise<void> {
      const { tensor, view } = get().inspect;
      if (!tensor) return;
      const inputs = mergeInputs(get().studio);
      if ('blocked' in inputs) {
        patch({ mask: failed({ name: 'NotReady', message: inputs.blocked }) });
        return;
      }
      // The newest view wins: an older pass still reading is cancelled.
      maskJob?.cancel();
      const job = services.engine.call('maskView', {
        base: inputs.base.slot,
        agents: inputs.agents.map((a) => a.slot),
        tensor,
        epsilon: get().studio.params.epsilon,
        view,
        maxRows: MASK_CANVAS_SIZE.height,
        maxCols: MASK_CANVAS_SIZE.width,
        palette,
      });
      maskJob = job;
      patch({ mask: { ...get().inspect.mask, status: 'running', error: null } });
      try {
        const result = await job.promise;
        if (maskJob === job) patch({ mask: { status: 'done', progress: null, error: null, result } });
      } catch (error) {
        const info = infoOf(error);
        if (maskJob === job && info.name !== 'AbortError') patch({ mask: failed(info) });
      } finally {
        if (maskJob === job) maskJob = null;
      }
    }

    return {
      inspect: initialInspectData(),
      async inspectTensor(name, index) {
        patch({ tensor: name, view: null, ...(index === undefined ? {} : { index }) });
        await showMask();
      },
      setInspectTarget(changes) {
        patch(changes);
      },
      async setMaskView(view) {
        patch({ view });
        await showMask();
      },
      async attachMaskCanvas(canvas, colours) {
        palette = colours;
        await services.engine.call('maskCanvas', { canvas }).promise;
        patch({ canvas: true });
        if (get().inspect.tensor) await showMask();
      },
      async runExplain() {
        const { tensor, index } = get().inspect;
        const inputs = mergeInputs(get().studio);
        if ('blocked' in inputs) {
          patch({ explain: failed({ name: 'NotReady', message: inputs.blocked }) });
          return;
        }
        if (!tensor) {
          patch({ explain: failed({ name: 'NoTensor', message: 'Choose a tensor to inspect.' }) });
          return;
        }
        explainJob?.cancel();
        const { params, outDtype } = get().studio;
        const job = services.engine.call('explain', {
          base: inputs.base.slot,
          agents: inputs.agents.map((a) => a.slot),
          params,
          outDtype: outDtype ?? undefined,
          tensor,
          index,
        });
        explainJob = job;
        patch({ explain: { status: 'running', progress: null, error: null, result: null } });
        try {
          const result = await job.promise;
          if (explainJob === job) patch({ explain: { status: 'done', progress: null, error: null, result } });
        } catch (error) {
          const info = infoOf(error);
          if (explainJob === job && info.name !== 'AbortError') patch({ explain: failed(info) });
        } finally {
          if (explainJob === job) explainJob = null;
        }
      },
    };
  };
}

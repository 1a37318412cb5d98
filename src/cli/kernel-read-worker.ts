// The worker thread of kernel-read.ts: reads and parses the kernel, posts the result (or the error) once.

import { parentPort, workerData } from 'node:worker_threads';
import { observeKernel, toWire, type KernelReadRequest } from './kernel-read.js';

observeKernel(workerData as KernelReadRequest).then(
  (value) => parentPort?.postMessage({ ok: true, value }),
  (err: unknown) => parentPort?.postMessage({ ok: false, error: toWire(err) }),
);

// The JSON-lines process client the sandbox agents run on (src/dataplane/process.ts). Needs python3, not root.

import { readdirSync, readFileSync } from 'node:fs';
import { killPid, startJsonLineProcess } from '../../../src/dataplane/process.js';

function processesMentioning(marker: string): string[] {
  return readdirSync('/proc').filter((d) => {
    try {
      return /^\d+$/.test(d) && readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(marker);
    } catch {
      return false;
    }
  });
}

/** Echo server: replies to `{id, delayMs, value}` after the delay, out of order when delays differ; `op: exit` exits. */
const ECHO = `
import json, sys, threading, time, os
print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
lock = threading.Lock()
def answer(req):
    time.sleep(req.get("delayMs", 0) / 1000)
    with lock:
        print(json.dumps({"id": req["id"], "value": req.get("value")}), flush=True)
for line in sys.stdin:
    req = json.loads(line)
    if req.get("op") == "exit":
        sys.stderr.write("bye\\n"); sys.stderr.flush(); os._exit(3)
    if req.get("op") == "ignore":
        continue
    threading.Thread(target=answer, args=(req,)).start()
`;

const start = (script = ECHO, readyTimeoutMs?: number) =>
  startJsonLineProcess({ file: 'python3', args: ['-c', script], ...(readyTimeoutMs ? { readyTimeoutMs } : {}) });

describe('startJsonLineProcess', () => {
  it('waits for the ready line and matches replies to requests by id, in any order', async () => {
    const proc = await start();
    try {
      expect(proc.hello['pid']).toBe(proc.pid);
      const replies = await Promise.all([
        proc.request({ value: 'slow', delayMs: 150 }, 2000),
        proc.request({ value: 'fast', delayMs: 0 }, 2000),
      ]);
      expect(replies.map((r) => r['value'])).toEqual(['slow', 'fast']);
    } finally {
      await proc.stop();
    }
  });

  it('times out a request that gets no reply, and keeps serving others', async () => {
    const proc = await start();
    try {
      await expect(proc.request({ op: 'ignore' }, 100)).rejects.toThrow('no reply to request');
      expect((await proc.request({ value: 1 }, 2000))['value']).toBe(1);
    } finally {
      await proc.stop();
    }
  });

  it('rejects pending and later requests once the process exits, with its stderr', async () => {
    const proc = await start();
    const pending = proc.request({ op: 'ignore' }, 5000);
    void proc.request({ op: 'exit' }, 5000).catch(() => undefined);
    await expect(pending).rejects.toThrow(/exited \(code 3.*bye/);
    await expect(proc.request({ value: 1 }, 1000)).rejects.toThrow('exited');
  });

  it.each([
    { name: 'exits before ready', script: 'import sys; sys.stderr.write("cannot bind\\n"); sys.exit(2)', error: /cannot bind/ },
    { name: 'never says ready', script: 'import time; time.sleep(30)', error: /no ready line/ },
  ])('fails to start when the process $name, leaving nothing running', async ({ script, error }) => {
    const marker = `nfs-process-test-${Math.random().toString(16).slice(2)}`;
    await expect(start(`${script}  # ${marker}`, 300)).rejects.toThrow(error);
    expect(processesMentioning(marker)).toEqual([]);
  });

  it('stop() ends the process', async () => {
    const proc = await start();
    const exit = await proc.stop();
    expect(exit.code !== 0 || exit.signal !== null).toBe(true);
    expect(() => process.kill(proc.pid, 0)).toThrow();
    killPid(proc.pid); // already gone: not an error
  });
});

// `netfence map --live`: each node's flow log read from its daemon's /flows (drops, and with ?audit=true the
// audit records), by the path `why --live` uses (--daemon-url NODE=URL, else the API server's pod proxy), and
// checked as `netfence drops` checks it. A node that cannot be read is named, never left out silently.

import type { DaemonConfig } from '../config/schema.js';
import type { NodeFlows } from '../map/index.js';
import type { Parsed } from './context.js';
import { parseFlowsAnswer } from '../commands/flows-answer.js';
import { terminalSafe } from '../commands/terminal-text.js';
import { reachFor } from './why-live.js';

export async function readFlows(
  parsed: Parsed,
  config: Pick<DaemonConfig, 'listenAddress'>,
  nodes: readonly string[],
): Promise<NodeFlows[]> {
  const reach = await reachFor(parsed, config);
  return Promise.all(
    nodes.map(async (node): Promise<NodeFlows> => {
      try {
        const answers = await Promise.all(['/flows', '/flows?audit=true'].map((path) => reach.get(node, path)));
        const records = answers.flatMap(({ status, body }, i) => {
          const what = `${node} ${i === 0 ? '/flows' : '/flows?audit=true'}`;
          // Through the pod proxy a daemon answers 401: it forwards no credentials (docs/limits.md).
          if (status !== 200) throw new Error(`${what} answered ${status}: ${body.trim().slice(0, 200)}`);
          return parseFlowsAnswer(body, what);
        });
        return { node, records };
      } catch (err) {
        return { node, error: terminalSafe((err as Error).message) };
      }
    }),
  );
}

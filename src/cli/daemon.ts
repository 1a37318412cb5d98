// `netfence daemon`: parse the options, start the daemon (src/daemon/), and stop it on SIGTERM or SIGINT.
// Stopping leaves the rules in place (the kernel keeps enforcing).

import { createLogger } from '../log.js';
import { startDaemon } from '../daemon/start.js';
import type { Io } from './command-specs.js';
import { configFrom, netnsOf, parseCommand, resourcePaths } from './context.js';

export async function daemonCommand(argv: readonly string[], io: Io): Promise<number> {
  const parsed = parseCommand('daemon', argv);
  const config = configFrom(parsed);
  const logger = createLogger({ level: config.logLevel, format: config.logFormat });
  const running = await startDaemon(config, {
    resources: resourcePaths(parsed),
    kubeconfig: parsed.values['kubeconfig'] as string | undefined,
    netns: netnsOf(parsed),
    logger,
  });
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info('stopping; the programmed rules stay in place', { signal });
      void running.stop().then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  io.err('');
  return 0;
}

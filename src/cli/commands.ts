// Which module runs each command. A command's module is imported only when that command runs, so
// `netfence --help` and `netfence compile` do not load the Kubernetes client, and `compile` does not load
// the code that runs iptables. Only main.ts imports this file: the command modules import their option
// parser from command-specs.ts, so no module imports one that lazily imports it back.

import type { Command, CommandName } from './command-specs.js';

export const COMMAND_MODULES: Readonly<Record<CommandName, () => Promise<Command>>> = {
  daemon: async () => (await import('./daemon.js')).daemonCommand,
  apply: async () => (await import('./commands-oneshot.js')).applyCommand,
  compile: async () => (await import('./compile.js')).compileCommand,
  diff: async () => (await import('./commands-oneshot.js')).diffCommand,
  inspect: async () => (await import('./inspect.js')).inspectCommand,
  trace: async () => (await import('./trace.js')).traceCommand,
  why: async () => (await import('./why.js')).whyCommand,
  map: async () => (await import('./map.js')).mapCommand,
  drops: async () => (await import('./drops.js')).dropsCommand,
  cleanup: async () => (await import('./commands-oneshot.js')).cleanupCommand,
};

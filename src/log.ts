// The one logger factory. There is no global logger: the composition root creates one and passes it
// down, and each module narrows it with `child({ component })` (kube-proxy's `proxier.logger`).

import { createRequire } from 'node:module';
import type { Writable } from 'node:stream';
import type Winston from 'winston';
import { LOG_LEVELS, type LogFormat, type LogLevel } from './log-levels.js';

export { type LogFormat, type LogLevel } from './log-levels.js';

/** Structured fields attached to one line. Error values are flattened so they survive JSON. */
export type LogFields = Readonly<Record<string, unknown>>;

export interface Logger {
  error(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  debug(message: string, fields?: LogFields): void;
  /** A logger whose every line carries `fields` (at least the component that writes it). */
  child(fields: { readonly component: string } & LogFields): Logger;
}

export interface LoggerOptions {
  readonly level: LogLevel;
  readonly format: LogFormat;
  /**
   * Where lines go. Default: stderr, for both formats, because stdout belongs to command output
   * (`netfence compile` prints restore text there and must stay pipeable).
   */
  readonly stream?: Writable;
}

/**
 * Lines below `options.level` are dropped before anything else, and winston is built by the first line that
 * passes: `netfence diff` and `apply` create loggers but, at their default level, rarely write a line, and
 * loading winston costs them ~80 ms of CPU. Lines that pass go through winston exactly as before.
 */
export function createLogger(options: LoggerOptions): Logger {
  let inner: Winston.Logger | undefined;
  return lazy(options.level, () => (inner ??= winstonLogger(options)));
}

/** A logger at `level` whose winston logger (`get`) is made only when a line at or above `level` is written. */
function lazy(level: LogLevel, get: () => Winston.Logger): Logger {
  const limit = LOG_LEVELS.indexOf(level);
  const write = (at: LogLevel) => (message: string, fields?: LogFields) => {
    if (LOG_LEVELS.indexOf(at) <= limit) get()[at](message, fields ?? {});
  };
  return {
    error: write('error'),
    warn: write('warn'),
    info: write('info'),
    debug: write('debug'),
    child: (fields) => {
      let child: Winston.Logger | undefined;
      return lazy(level, () => (child ??= get().child(fields)));
    },
  };
}

function winstonLogger(options: LoggerOptions): Winston.Logger {
  const { winston, flattenErrors, textLine } = winstonParts();
  const transport = options.stream
    ? new winston.transports.Stream({ stream: options.stream })
    : new winston.transports.Console({ stderrLevels: [...LOG_LEVELS] });
  const format = winston.format.combine(
    flattenErrors(),
    winston.format.timestamp(),
    options.format === 'json' ? winston.format.json() : textLine,
  );
  // winston's npm levels are a superset of ours with the same order; only ours are reachable.
  return winston.createLogger({ level: options.level, format, transports: [transport] });
}

interface WinstonParts {
  readonly winston: typeof Winston;
  readonly flattenErrors: Winston.Logform.FormatWrap;
  readonly textLine: Winston.Logform.Format;
}

let parts: WinstonParts | undefined;

/**
 * winston is loaded by the first logger, not on import: it takes longer to load (~80 ms of CPU) than
 * `netfence compile` or `--help` take to do their work, and they never log.
 */
function winstonParts(): WinstonParts {
  if (!parts) {
    const winston = createRequire(import.meta.url)('winston') as typeof Winston;
    parts = { winston, flattenErrors: flattenErrorsOf(winston), textLine: textLineOf(winston) };
  }
  return parts;
}

/** A logger that drops everything: for tests and library callers that do not care. */
export const nullLogger: Logger = {
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
  child: () => nullLogger,
};

// `JSON.stringify(new Error('x'))` is `{}`; keep what an operator needs to act on (name, message and
// own fields such as DataplaneCommandError's command/stderr/line).
const flattenErrorsOf = (winston: typeof Winston) =>
  winston.format((info) => {
    for (const [key, value] of Object.entries(info)) {
      if (value instanceof Error) info[key] = errorFields(value);
    }
    return info;
  });

function errorFields(err: Error): Record<string, unknown> {
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(err)) own[key] = value;
  return { name: err.name, message: err.message, ...own };
}

// Text lines: `2024-05-01T10:00:00.000Z info  [sync] applied chains=12 sets=3`.
const textLineOf = (winston: typeof Winston) =>
  winston.format.printf((info) => {
    const { timestamp, level, message, component, ...rest } = info;
    // Object.entries skips winston's Symbol-keyed internals (LEVEL, MESSAGE, SPLAT).
    const fields = Object.entries(rest).map(([key, value]) => `${key}=${formatValue(value)}`);
    const where = component === undefined ? '' : `[${String(component)}] `;
    return [`${String(timestamp)} ${level.padEnd(5)} ${where}${String(message)}`, ...fields].join(' ');
  });

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

// Log levels and formats as plain values, apart from log.ts so that reading them (configuration
// schema, `--help`) does not load winston.

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const LOG_FORMATS = ['json', 'text'] as const;
/** `json`: one object per line, for nodes and log shippers. `text`: readable lines, for the CLI. */
export type LogFormat = (typeof LOG_FORMATS)[number];

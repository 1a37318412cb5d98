import { PassThrough } from 'node:stream';
import { createLogger, nullLogger, type LogFormat, type LogLevel } from '../../../src/log.js';

function capture(level: LogLevel, format: LogFormat) {
  const stream = new PassThrough();
  const lines: string[] = [];
  stream.on('data', (chunk: Buffer) => lines.push(...chunk.toString('utf8').split('\n').filter(Boolean)));
  return { logger: createLogger({ level, format, stream }), lines };
}

// winston writes through a stream; one macrotask lets it drain.
const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('createLogger', () => {
  it('writes JSON lines with timestamp, level, component and fields', async () => {
    const { logger, lines } = capture('info', 'json');
    logger.child({ component: 'sync' }).info('applied', { chains: 12 });
    await flush();
    expect(lines).toHaveLength(1);
    const entry = JSON.parse(lines[0] ?? '') as Record<string, unknown>;
    expect(entry).toEqual({
      level: 'info',
      message: 'applied',
      component: 'sync',
      chains: 12,
      timestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
  });

  it('writes readable text lines', async () => {
    const { logger, lines } = capture('debug', 'text');
    logger.child({ component: 'dataplane' }).warn('restore failed', { line: 7, table: 'filter', note: 'two words' });
    await flush();
    expect(lines).toEqual([expect.stringMatching(/^\d{4}-\S+ warn {2}\[dataplane\] restore failed line=7 table=filter note="two words"$/)]);
  });

  it.each<{ level: LogLevel; written: string[] }>([
    { level: 'error', written: ['error'] },
    { level: 'warn', written: ['error', 'warn'] },
    { level: 'info', written: ['error', 'warn', 'info'] },
    { level: 'debug', written: ['error', 'warn', 'info', 'debug'] },
  ])('level $level filters lower levels', async ({ level, written }) => {
    const { logger, lines } = capture(level, 'json');
    logger.error('e');
    logger.warn('w');
    logger.info('i');
    logger.debug('d');
    await flush();
    expect(lines.map((line) => (JSON.parse(line) as { level: string }).level)).toEqual(written);
  });

  it('keeps error details that JSON.stringify would drop', async () => {
    const { logger, lines } = capture('info', 'json');
    const err = Object.assign(new Error('exit status 2'), { command: 'iptables-restore --noflush', line: 4 });
    logger.error('apply failed', { err });
    await flush();
    expect((JSON.parse(lines[0] ?? '') as { err: unknown }).err).toEqual({
      name: 'Error',
      message: 'exit status 2',
      command: 'iptables-restore --noflush',
      line: 4,
    });
  });

  it('nests child fields', async () => {
    const { logger, lines } = capture('info', 'json');
    logger.child({ component: 'sync' }).child({ component: 'sync', table: 'filter' }).info('x');
    await flush();
    expect(JSON.parse(lines[0] ?? '')).toMatchObject({ component: 'sync', table: 'filter' });
  });

  it('nullLogger accepts everything and stays null', () => {
    expect(nullLogger.child({ component: 'x' })).toBe(nullLogger);
    expect(() => nullLogger.error('ignored', { a: 1 })).not.toThrow();
  });
});

// `host:port` for the observability server: `0.0.0.0:9476`, `[::]:9476`, `127.0.0.1:0`, `:9476`.

import { parseIp } from '../model/address.js';

export interface ListenAddress {
  /** Empty host (`:9476`) means every interface, as Go's net.Listen reads it. */
  readonly host: string;
  /** 0 asks the kernel for a free port (tests). */
  readonly port: number;
}

export function parseListenAddress(text: string): ListenAddress | undefined {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const [, v6Host, otherHost, portText = ''] = match;
  const port = Number(portText);
  if (port > 65535) return undefined;
  if (v6Host !== undefined) return parseIp(v6Host)?.family === 6 ? { host: v6Host, port } : undefined;
  const host = otherHost ?? '';
  if (host === '' || parseIp(host)?.family === 4) return { host, port };
  // Otherwise a hostname (`localhost:9476`): it must look like one, and not like a broken IPv4 address.
  if (/^[\d.]+$/.test(host) || !/^[a-zA-Z0-9]([a-zA-Z0-9.-]*[a-zA-Z0-9])?$/.test(host)) return undefined;
  return { host, port };
}

// A saved dump is `iptables-save` output followed by `ipset save` output (either order), or
// `netfence compile` output: split back into the two tools' texts.

export function extractIptables(text: string): string {
  return text
    .split('\n')
    .filter((l) => !/^(create|add) /.test(l))
    .join('\n');
}

export function extractIpsets(text: string): string {
  return text
    .split('\n')
    .filter((l) => /^(create|add) /.test(l))
    .join('\n');
}

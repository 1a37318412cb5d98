import { checkName, checkNamespace, nodeKey, podKey, randomVethName, sandboxNames } from '../../../sandbox/names.js';

describe('sandbox names', () => {
  const names = sandboxNames('1a2b');

  it('prefixes every namespace with the run id', () => {
    expect(names.prefix).toBe('nfs1a2b-');
    expect(names.underlayNetns).toBe('nfs1a2b-underlay');
    expect(names.nodeNetns('n1')).toBe('nfs1a2b-node-n1');
    expect(names.podNetns('x', 'a')).toBe('nfs1a2b-pod-x.a');
  });

  it('keeps namespace and pod apart where dashes would collide', () => {
    expect(names.podNetns('x-a', 'b')).not.toBe(names.podNetns('x', 'a-b'));
  });

  it.each(['', 'ABCD', '1a2b3c4d5', 'a-b'])('rejects the run id "%s"', (id) => {
    expect(() => sandboxNames(id)).toThrow('invalid sandbox id');
  });

  it('names host veths as flannel does', () => {
    expect(randomVethName()).toMatch(/^veth[0-9a-f]{8}$/);
  });

  it.each(['a/b', 'A', '-a', 'a b', ''])('rejects the pod name "%s"', (name) => {
    expect(() => checkName('pod', name)).toThrow('invalid pod name');
  });

  it('rejects dots in namespace names, which separate namespace and pod', () => {
    expect(() => checkNamespace('x.y')).toThrow('invalid namespace name');
    expect(() => checkNamespace('x-y')).not.toThrow();
  });

  it('keys pods and nodes the way matrices show them', () => {
    expect(podKey('x', 'a')).toBe('x/a');
    expect(nodeKey('n1')).toBe('node:n1');
  });
});

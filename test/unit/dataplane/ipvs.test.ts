import { ipvsFrom } from '../../../src/dataplane/ipvs.js';

const link = (name: string, kind?: string, addresses: string[] = []) => ({ name, index: 1, ...(kind ? { kind } : {}), addresses });

const PROC_IP_VS = `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port Forward Weight ActiveConn InActConn
TCP  0A600001:01BB rr
  -> C0A80002:192B      Masq    1      0          0
UDP  0A60000A:0035 rr
`;

describe('ipvsFrom', () => {
  it("detects kube-proxy's IPVS mode by its kube-ipvs0 dummy device, and reports the virtual servers", () => {
    const found = ipvsFrom([link('lo'), link('kube-ipvs0', 'dummy', ['10.96.0.1', '10.96.0.10'])], PROC_IP_VS);
    expect(found.detected).toBe(true);
    expect(found.evidence).toEqual(['kube-ipvs0 device (dummy) with 2 service address(es)', '2 IPVS virtual server(s) in /proc/net/ip_vs']);
  });

  it('does not call IPVS virtual servers without kube-ipvs0 kube-proxy (another load balancer), nor a node without ip_vs', () => {
    expect(ipvsFrom([link('eth0')], PROC_IP_VS).detected).toBe(false);
    expect(ipvsFrom([link('eth0'), link('cni0', 'bridge')], undefined)).toEqual({ detected: false, evidence: [] });
  });
});

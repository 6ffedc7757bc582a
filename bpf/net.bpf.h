/* TCP retransmissions (every socket: NCCL over TCP and the noisy neighbour alike). */
#pragma once

#include "maps.bpf.h"

/* raw_tp/tcp_retransmit_skb(const struct sock *sk, const struct sk_buff *skb) */
SEC("raw_tp/tcp_retransmit_skb")
int cw_tcp_retransmit(struct bpf_raw_tracepoint_args *ctx) {
  if (cw_stopped) return 0;
  struct sock *sk = (struct sock *)ctx->args[0];
  struct cw_host_event *e = bpf_ringbuf_reserve(&rb_host, sizeof(*e), 0);
  if (!e) {
    count_drop(CW_DROP_RING_HOST);
    return 0;
  }
  fill_header(&e->hdr, bpf_ktime_get_ns(), CW_OP_TCP_RETRANSMIT, CW_REC_HOST, CW_SRC_NET);
  e->dur_ns = 0;
  e->a[0] = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
  e->a[1] = BPF_CORE_READ(sk, __sk_common.skc_num);
  e->a[2] = BPF_CORE_READ(sk, __sk_common.skc_daddr);
  e->a[3] = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
  e->a[4] = BPF_CORE_READ(sk, __sk_common.skc_state);
  e->a[5] = 0;
  bpf_ringbuf_submit(e, wake_flag(&rb_host, targ_wake_host));
  return 0;
}

"""Session 4's last H200 check: the configs the build gate's aligned form (AotVariant.aligned_ints) made the
launcher change, against the ones they replace (benchmarks/RESULTS.md, session 4).

  * exact-float32 attention at head block 128, [1, 16, 1024, 128]: (32, 16, 4, 1) spills 424 B as launched;
    (32, 16, 8, 1) and (16, 16, 4, 1) do not;
  * decode over 32k keys, float32 with plain tf32 products: _DEC_GPU's (64, 8, 2) spills at h64 as launched;
    the 4-warp long-cache tiles; tf32x3 at h128 with (32, 4, 3), which the gate's old unaligned form refused.

    PYTHONPATH=. python3 benchmarks/check_session4.py
"""
import torch
from tilewave.kernels import attention as A
from tilewave.harness.timing import time_cuda


def t(fn):
    fn()
    torch.cuda.synchronize()
    return min(time_cuda(fn, warmup=5, reps=30).median_us for _ in range(2))


g = torch.Generator("cuda").manual_seed(0)
q, k, v = (torch.randn(1, 16, 1024, 128, generator=g, device="cuda") for _ in range(3))
ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double())
for cfg in ((32, 16, 4, 1), (32, 16, 8, 1), (16, 16, 4, 1)):
    fn = lambda: A._launch_fwd(q, k, v, None, None, None, None, "ieee", None, "sdpa_bidirectional", config=cfg)
    out = fn()
    print("sdpa ieee [1,16,1024,128]", cfg, f"{t(fn):.1f} us err {(out.double() - ref).abs().max().item():.1e}",
          flush=True)
for d, cfgs in ((64, [(64, 8, 2), (64, 4, 3)]), (128, [(64, 8, 2), (32, 4, 3)])):
    q = torch.randn(1, 64, d, generator=g, device="cuda")
    kc = torch.randn(1, 8, 32768, d, generator=g, device="cuda")
    vc = torch.randn(1, 8, 32768, d, generator=g, device="cuda")
    s = torch.randn(64, generator=g, device="cuda")
    ref = A.sdpa_decode_sink_oracle(q.double(), kc.double(), vc.double(), s.double())
    for prec, cl in (("tf32", cfgs), ("tf32x3", [(32, 4, 3)] if d == 128 else [])):
        for cfg in cl:
            fn = lambda: A._launch_decode(q, kc, vc, s, None, None, None, prec, None, None, config=cfg,
                                          fused_combine=False)
            out = fn()
            print("decode 32k", prec, d, cfg, f"{t(fn):.1f} us err {(out.double() - ref).abs().max().item():.1e}",
                  flush=True)
